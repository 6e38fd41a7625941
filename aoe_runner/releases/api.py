"""Bank releases as the command line uses them: publish, pull, roll back, list, show and compare versions."""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from aoe_runner.common.words import count
from aoe_runner.errors import AoeRunnerError, EnvironmentDrift, ExitCode, InputError
from aoe_runner.releases.catalog import Catalog
from aoe_runner.releases.pull import Pulled, pull_version, roll_back
from aoe_runner.releases.version import BankVersion
from aoe_runner.runs.bank import changes_between, take_inventory
from aoe_runner.runs.history import RunStore
from aoe_runner.runs.manifest import BankFile, BankInventory

KERNEL_CACHE = Path("atc_data") / "kernel_cache"  # under the user's home: compiled kernels, per SoC (AOE.md §5)


@dataclass
class PullOutcome:
    pulled: Pulled
    version: BankVersion
    environment: dict[str, str]
    notes: list[str] = field(default_factory=list)


def pull(
    store: RunStore,
    catalog: Catalog,
    reference: tuple[str, int | None],
    path: Path,
    allow_env_drift: bool = False,
    keep_kernel_cache: bool = False,
) -> PullOutcome:
    """Pull NAME[@N] to path: refused (EnvironmentDrift) when its SoC, CANN or driver differ from this host's."""
    from aoe_runner.preflight.facts import gather_facts
    from aoe_runner.tune.record import fingerprint_of

    version = catalog.get(*reference)
    here = fingerprint_of(gather_facts(count_history=False))
    drift = version.fingerprint.drift_from(here)
    if drift and not allow_env_drift:
        raise EnvironmentDrift(f"{version.label} was tuned elsewhere: {'; '.join(drift)}; --allow-env-drift pulls it anyway")
    try:
        pulled = pull_version(version, path, store.blobs, f"aoe-runner bank pull {version.label} --to {path}")
    except InputError as error:
        if version.host == here.hostname or not str(error.where).startswith(str(store.blobs.home)):
            raise
        hint = f"{version.label} was published on {version.host}: its contents reach other hosts through a shared"
        raise InputError(error.where, f"{error.reason}; {hint} artifacts directory (store init URL --artifacts DIR)") from None
    outcome = PullOutcome(pulled, version, training_environment(pulled.path), list(pulled.notes))
    if drift:
        outcome.notes.append(f"pulled despite: {'; '.join(drift)}")
    if pulled.changed:
        outcome.notes.append(_kernel_cache(version.soc or here.soc, keep_kernel_cache))
    return outcome


def rollback(path: Path) -> Pulled:
    return roll_back(path, f"aoe-runner bank rollback {path}")


def training_environment(path: Path) -> dict[str, str]:
    """What a training job sets to use the bank at path: the bank, and the compile cache rebuilt so the bank is
    read (PyTorch's variable; TensorFlow and MindSpore take op_compiler_cache_mode=force in their session config)."""
    return {"TUNE_BANK_PATH": str(path), "ACL_OP_COMPILER_CACHE_MODE": "force"}


def environment_lines(environment: dict[str, str]) -> str:
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in environment.items())


def check_env_file(path: Path) -> Path:
    """The file to write for --env-file (a symbolic link's target), or InputError before a pull changes anything, when
    it could not be written or is no regular file (a device, FIFO or socket is never replaced)."""
    from aoe_runner.common.files import output_place

    try:
        place = Path(output_place(str(path)))
    except InputError as refused:
        raise InputError(refused.where, f"--env-file: {refused.reason}") from None
    if place.is_dir() or not place.parent.is_dir() or not os.access(place.parent, os.W_OK):
        raise InputError(str(path), "--env-file: cannot be written there (a directory, or no writable directory to hold it)")
    return place


def write_env_file(path: Path, environment: dict[str, str]) -> None:
    from aoe_runner.common.files import atomic_write_text

    try:
        atomic_write_text(check_env_file(path), environment_lines(environment))
    except OSError as error:
        raise InputError(str(path), f"--env-file: cannot be written: {error.strerror or error}") from None


def _kernel_cache(soc: str | None, keep: bool) -> str:
    """Clear this user's compiled-kernel cache for the SoC, so the new bank is used; or say that it should be."""
    if soc is None:
        return f"the SoC is not known here: clear ~/{KERNEL_CACHE}/<soc> by hand so the new bank is used"
    cache = Path.home() / KERNEL_CACHE / soc
    if keep:
        return f"--keep-kernel-cache: {cache} was kept; clear it before training so the new bank is used"
    if cache.is_symlink() or not cache.is_dir():
        return f"no kernel cache to clear ({cache} is not a directory)"
    shutil.rmtree(cache, ignore_errors=True)
    return (
        f"cleared the kernel cache {cache}, so the new bank is used" if not cache.exists() else f"could not clear all of {cache}"
    )


# -- comparing versions ---------------------------------------------------------------------------


@dataclass
class VersionDiff:
    older: str
    newer: str
    added: list[str]
    removed: list[str]
    changed: list[str]
    operators: list[dict[str, object]]  # per operator or subgraph: kind, name, each version's recorded speed-up


def diff_versions(store: RunStore, older: BankVersion, newer: BankVersion) -> VersionDiff:
    changes = changes_between(_inventory(store, older), _inventory(store, newer))
    operators = _operators(store, older, newer)
    return VersionDiff(older.label, newer.label, changes.added, changes.removed, changes.modified, operators)


def version_files(store: RunStore, version: BankVersion) -> list[BankFile]:
    return sorted(_inventory(store, version).files, key=lambda file: file.path)


def _inventory(store: RunStore, version: BankVersion) -> BankInventory:
    stub = BankInventory(directory=version.label, exists=True, taken_at=version.published_at, stored=version.inventory)
    return store.blobs.expand(stub)


def _operators(store: RunStore, older: BankVersion, newer: BankVersion) -> list[dict[str, object]]:
    """The speed-up each version's source runs recorded per operator and subgraph (the best, where several did)."""
    from aoe_runner.runs.outcomes import recorded_results

    found: dict[tuple[str, str], dict[str, object]] = {}
    best: dict[tuple[str, str, str], float] = {}
    for version in (older, newer):
        for source in version.sources:
            try:
                manifest = store.load(source.run)
            except InputError:
                continue  # a run recorded on another host, or removed: its results are not here
            for result in recorded_results(manifest, store.run_dir(source.run)):
                key = (result.kind, result.name)
                row = found.setdefault(key, {"kind": result.kind, "name": result.name, older.label: None, newer.label: None})
                if result.speedup is not None and result.speedup > best.get((*key, version.label), float("-inf")):
                    best[(*key, version.label)] = row[version.label] = result.speedup
    return [found[key] for key in sorted(found)]


class NotInPlace(AoeRunnerError):
    """The bank at PATH is not the published version it should be (exit 1)."""

    exit_code = ExitCode.FINDING


def check_in_place(store: RunStore, version: BankVersion, path: Path) -> None:
    """NotInPlace unless the bank at path holds exactly the version's files (what a pull of it put there)."""
    changes = changes_between(_inventory(store, version), take_inventory(path))
    differ = sorted(changes.added + changes.removed + changes.modified)
    if differ:
        raise NotInPlace(
            f"{path} does not hold {version.label} ({count(len(differ), 'file')} not as published, first {differ[0]}): "
            f"aoe-runner bank pull {version.label} --to {path}"
        )
