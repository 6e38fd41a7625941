"""`bank publish`: the bank one or more tuning runs left becomes the next version of a named bank.

Bank files are opaque (AOE.md §3): a version is made of whole files, never of edited ones. Files whose names hold
`runtime_kb` are left out (AOE never merges them), and so are the operator files of any SoC but the version's own
(`<soc>/...` at the bank's top). Two runs holding one path with different contents is a conflict: refused, unless
`prefer` names the run that wins. The contents go to the blob store (the artifacts directory with a shared store),
once per content, so versions share unchanged files; the version's record names its inventory there.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from aoe_runner.common.words import count
from aoe_runner.errors import AoeRunnerError, EnvironmentDrift, ExitCode, InputError, UsageError
from aoe_runner.releases.catalog import Catalog
from aoe_runner.releases.proof import passing_proof
from aoe_runner.releases.pull import check_inventory
from aoe_runner.releases.version import RUNTIME_KB, BankVersion, Proof, Source, check_name
from aoe_runner.runs.bank import keep_content
from aoe_runner.runs.history import TUNING, RunStore
from aoe_runner.runs.manifest import BankFile, BankInventory, RunManifest
from aoe_runner.runs.prune import keeping_runs

SOC_DIRECTORY = re.compile(r"Ascend[0-9A-Za-z]+")  # `<soc_version>/` at a bank's top holds operator files
SHOWN_CONFLICTS = 5


class PublishRefused(AoeRunnerError):
    """Nothing was published: no proof, a conflict, or files AOE's rules keep apart (exit 1, a finding)."""

    exit_code = ExitCode.FINDING


@dataclass(frozen=True)
class PublishRequest:
    runs: tuple[str, ...]
    name: str
    note: str | None = None
    unverified: bool = False
    prefer: str | None = None
    soc: str | None = None
    merge_with_aoe: bool = False


@dataclass(frozen=True)
class _Run:
    manifest: RunManifest
    bank: BankInventory  # as the run left it, expanded


def publish(store: RunStore, catalog: Catalog, request: PublishRequest) -> BankVersion:
    """Publish the runs' banks as the next version of request.name; PublishRefused, EnvironmentDrift or InputError
    (a run, or a content no longer to be had) before anything is recorded."""
    check_name(request.name)
    with keeping_runs(store):  # no runs prune or runs rm between reading the runs and recording the version
        return _publish(store, catalog, request)


def _publish(store: RunStore, catalog: Catalog, request: PublishRequest) -> BankVersion:
    runs = _runs(store, request.runs)
    if request.merge_with_aoe and (len(runs) < 2 or request.prefer):
        raise UsageError("--merge-with-aoe merges the banks of two or more runs (--from RUN --from RUN), without --prefer")
    fingerprint = runs[0].manifest.fingerprint
    for run in runs[1:]:
        if drift := run.manifest.fingerprint.drift_from(fingerprint):
            raise EnvironmentDrift(f"runs {runs[0].manifest.id} and {run.manifest.id} differ: {'; '.join(drift)}")
    preferred = _preferred(request.prefer, runs)
    proofs = _proofs(store, runs, request.unverified)
    soc = _soc(_socs(runs), request.soc, fingerprint.soc)
    kept = {run.manifest.id: [file for file in run.bank.files if _why_left_out(file.path, soc) is None] for run in runs}
    left_out = sorted(
        {f"{file.path}: {why}" for run in runs for file in run.bank.files if (why := _why_left_out(file.path, soc))}
    )
    with store.blobs.writing():  # the contents stay until the version's record names them
        if request.merge_with_aoe:
            files, directories, merged_by = _merged(store, runs, kept, soc, request.name, left_out)
        else:
            (files, directories), merged_by = _combined_contents(store, runs, kept, preferred, soc), None
        directory = runs[0].bank.directory if len(runs) == 1 else f"{request.name} (published from {len(runs)} runs)"
        inventory = BankInventory(
            directory=directory, exists=True, files=files, directories=directories, taken_at=datetime.now(timezone.utc)
        )
        check_inventory(inventory, f"the bank of run {runs[0].manifest.id}" if len(runs) == 1 else "the combined bank")
        stored = store.blobs.save_inventory(inventory, remember=False)
        version = BankVersion(
            name=request.name, number=0, published_at=inventory.taken_at, host=socket.gethostname(), note=request.note,
            fingerprint=fingerprint, soc=soc, sources=[_source(run) for run in runs], proofs=proofs,
            unverified=request.unverified and len(proofs) < len(runs), inventory=stored.stored or "",
            files=stored.count, bytes=stored.total_bytes, left_out=left_out, preferred=preferred, merged_by=merged_by,
        )  # fmt: skip
        return catalog.publish(version)


def _combined_contents(
    store: RunStore, runs: list[_Run], kept: dict[str, list[BankFile]], preferred: str | None, soc: str | None
) -> tuple[list[BankFile], list[str]]:
    """The version's files and directories, each file whole from one run, its content in the blob store."""
    files, owners = _combined(runs, kept, preferred)
    for run in runs:
        _keep_contents(store, run, [file for file in files if owners[file.path] == run.manifest.id])
    directories = {directory for run in runs for directory in run.bank.directories or []}
    return files, sorted(directory for directory in directories if _why_left_out(directory + "/", soc) is None)


def _merged(
    store: RunStore, runs: list[_Run], kept: dict[str, list[BankFile]], soc: str | None, name: str, left_out: list[str]
) -> tuple[list[BankFile], list[str], str]:
    """The version's files and directories as AOE's merge tool wrote them, held to the same rules (what it should
    not have written is added to left_out), and which tool did it."""
    from aoe_runner.releases.aoe_merge import merge_banks

    for run in runs:
        _keep_contents(store, run, kept[run.manifest.id])
    merged = merge_banks(store, [(run.manifest.id, kept[run.manifest.id]) for run in runs], name)
    files = [file for file in merged.files if _why_left_out(file.path, soc) is None]
    left_out += [f"{f.path}: {why}, in what the merge tool wrote" for f in merged.files if (why := _why_left_out(f.path, soc))]
    if not files:
        raise PublishRefused(f"AOE's merge tool ({merged.tool}) wrote no bank file: nothing was published")
    return files, [d for d in merged.directories if _why_left_out(d + "/", soc) is None], merged.tool


def _runs(store: RunStore, references: tuple[str, ...]) -> list[_Run]:
    if not references:
        raise UsageError("bank publish needs a run: RUN, or --from RUN for each of several")
    found: dict[str, _Run] = {}
    for reference in references:
        manifest = store.resolve(reference, kind=TUNING)
        if manifest.bank_after is None:
            raise InputError(f"run {manifest.id}", "recorded no bank after it ran: there is nothing to publish")
        found.setdefault(manifest.id, _Run(manifest, store.blobs.expand(manifest.bank_after)))
    return list(found.values())


def _proofs(store: RunStore, runs: list[_Run], unverified: bool) -> list[Proof]:
    proofs = []
    for run in runs:
        proof = passing_proof(store.home, run.manifest.id, run.bank)
        if proof is not None:
            proofs.append(proof)
        elif not unverified:
            raise PublishRefused(
                f"run {run.manifest.id}: no passing verification of its bank (a verify whose tuned arm ran with exactly "
                f"this bank and found it faster, every gate passed): run 'aoe-runner verify SCRIPT --run "
                f"{run.manifest.id}', or publish with --unverified"
            )
    return proofs


def _combined(runs: list[_Run], kept: dict[str, list[BankFile]], preferred: str | None) -> tuple[list[BankFile], dict[str, str]]:
    """The version's files, each whole from one run, and the run each comes from; PublishRefused where two runs hold
    one path with different contents and `preferred` names neither."""
    chosen: dict[str, tuple[BankFile, str]] = {}  # path -> (file, run id)
    conflicts = []
    for run in runs:
        for file in kept[run.manifest.id]:
            held = chosen.get(file.path)
            if held is None or run.manifest.id == preferred:
                chosen[file.path] = (file, run.manifest.id)
            elif held[0].differs_from(file) and held[1] != preferred:
                conflicts.append(f"{file.path} ({held[1]} and {run.manifest.id})")
    if conflicts:
        more = f"; and {len(conflicts) - SHOWN_CONFLICTS} more" if len(conflicts) > SHOWN_CONFLICTS else ""
        shown = "; ".join(conflicts[:SHOWN_CONFLICTS]) + more
        raise PublishRefused(
            f"{count(len(conflicts), 'file')} with different contents in the runs: {shown}; --prefer RUN says whose "
            "wins, or --merge-with-aoe has AOE's own merge tool combine them"
        )
    files = [chosen[path][0] for path in sorted(chosen)]
    return files, {path: owner for path, (_, owner) in chosen.items()}


def _socs(runs: list[_Run]) -> list[str]:
    """The SoCs whose operator files the runs' banks hold (`<soc>/...` at a bank's top)."""
    tops = {file.path.split("/", 1)[0] for run in runs for file in run.bank.files if "/" in file.path}
    return sorted(top for top in tops if SOC_DIRECTORY.fullmatch(top))


def _why_left_out(path: str, soc: str | None) -> str | None:
    """Why a bank file is not in the version (None: it is)."""
    top = path.split("/", 1)[0]
    if RUNTIME_KB in path.rsplit("/", 1)[-1]:
        return "a runtime_kb file, which AOE never merges"
    if "/" in path and SOC_DIRECTORY.fullmatch(top) and top != soc:
        return f"for {top}, not {soc}"
    return None


def _soc(socs: list[str], wanted: str | None, run_soc: str | None) -> str | None:
    if wanted is not None:
        if wanted not in socs:
            raise PublishRefused(
                f"--soc {wanted}: the bank holds no operator files for it (it holds {', '.join(socs) or 'none'})"
            )
        return wanted
    if len(socs) > 1:
        raise PublishRefused(
            f"the bank holds operator files of {len(socs)} SoCs ({', '.join(socs)}), which AOE never merges: "
            "--soc SOC publishes one of them"
        )
    if socs and run_soc and socs[0] != run_soc:
        raise PublishRefused(
            f"the bank's operator files are for {socs[0]}, but the run ran on {run_soc}: --soc {socs[0]} publishes them anyway"
        )
    return socs[0] if socs else run_soc


def _keep_contents(store: RunStore, run: _Run, files: list[BankFile]) -> None:
    """Every content of files in the blob store: a run recorded before aoe-runner kept what tuning wrote has its
    contents read from its bank, if the bank still holds them."""
    bank = Path(run.bank.directory)
    for file in files:
        if file.link is not None or store.blobs.has_blob(file.sha256):
            continue
        try:
            digest = keep_content(bank, file.path, store.blobs)
        except InputError as error:
            why = f"{error.reason}; the content run {run.manifest.id} left was not kept, and its bank no longer has it"
            raise InputError(error.where, why) from None
        if digest != file.sha256:
            why = f"changed since run {run.manifest.id}, and the content that run left was not kept: nothing was published"
            raise InputError(str(bank / file.path), why)


def _source(run: _Run) -> Source:
    return Source(run=run.manifest.id, host=run.manifest.fingerprint.hostname, bank=run.bank.directory, files=run.bank.count)


def _preferred(prefer: str | None, runs: list[_Run]) -> str | None:
    """The run --prefer names (an id or its unique start), among those published."""
    if prefer is None:
        return None
    found = [run.manifest.id for run in runs if run.manifest.id.startswith(prefer)]
    if len(found) != 1:
        raise UsageError(f"--prefer {prefer}: names {'none' if not found else 'more than one'} of the runs published")
    return found[0]
