"""One `aoe-runner verify`: the unchanged script in two arms, interleaved, every run recorded, then the verdict.

Both arms run without AOE_MODE and with the operator compile cache forced to rebuild (AOE.md §3), so the
tuned bank is really matched: baseline with TUNE_BANK_PATH at an empty directory, tuned with the bank.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from aoe_runner.common.devlock import BankLock, DeviceLock, LockHolder
from aoe_runner.common.files import atomic_write_text
from aoe_runner.common.jsontext import dump_json
from aoe_runner.common.locks import run_command
from aoe_runner.errors import AoeRunnerError, InputError, Interrupted, UsageError
from aoe_runner.frameworks.detect import detect_framework
from aoe_runner.frameworks.kinds import Framework
from aoe_runner.preflight.facts import HostFacts, gather_facts, resolve_against
from aoe_runner.runs.bank import take_inventory
from aoe_runner.runs.history import TUNING, RunStore
from aoe_runner.runs.manifest import RecordedResult, RunManifest, RunStatus, VerifyLink
from aoe_runner.tune.flows import SWITCH_REPORT, FrameworkFlow, launched
from aoe_runner.tune.record import RunReporter, ScriptIdentity, discarded_on_failure, execute_recorded, fingerprint_of
from aoe_runner.tune.request import check_script, device_id, script_command
from aoe_runner.verify.evidence import Evidence, arm_evidence, inventory_sha256, result_files
from aoe_runner.verify.gates import Gates, evaluate
from aoe_runner.verify.measure import MIN_STEPS, Arm, Measured, RunFailed, RunSteps, StepReader
from aoe_runner.verify.report import VerifyReport
from aoe_runner.verify.stats import compare
from aoe_runner.verify.steps import custom_format

REMOVED = ("AOE_MODE",)
FORCED_CACHE = {"ACL_OP_COMPILER_CACHE_MODE": "force", "OP_COMPILER_CACHE_MODE": "force"}
__all__ = ["RunFailed", "RunSteps", "VerifyReport", "VerifyRequest", "run_verify"]


@dataclass
class VerifyRequest:
    script: Path | None
    arguments: list[str] = field(default_factory=list)
    bank: Path | None = None
    run: str | None = None
    repeats: int = 3
    warmup: int | None = None
    step_pattern: str | None = None
    unit: str | None = None
    threshold_pct: float = 2.0
    gates: Gates = field(default_factory=Gates)
    python: str = sys.executable
    device: int | None = None
    timeout_s: float | None = None
    grace_s: float = 10.0
    published: str | None = None  # NAME@N: the bank is that published version, as a pull put it at --bank


@dataclass
class _Plan:
    script: Path
    arguments: list[str]
    bank: Path
    tuning_run: str | None
    python: str
    result_files: list[RecordedResult] = field(default_factory=list)
    framework: Framework | None = None  # PyTorch runs through the launcher, which sets jit_compile


@dataclass
class _Bank:
    """The bank a run was given, as it found it."""

    sha256: str
    files: int


def run_verify(request: VerifyRequest, reporter: RunReporter, store: RunStore) -> VerifyReport:
    _check_gates(request)
    plan = _plan(request, store)
    step_format = custom_format(request.step_pattern, request.unit) if request.step_pattern else None
    if request.unit and not request.step_pattern:
        raise UsageError("--unit needs --step-pattern (the built-in formats know their units)")
    store.ensure_writable()
    base = dict(os.environ)
    device = device_id(request.device, base)
    verification = f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{secrets.token_hex(RunStore.ID_RANDOM_BYTES)}"
    directory = store.home / "verifications" / verification
    empty_bank = directory / "empty-bank"
    empty_bank.mkdir(parents=True)
    with ScriptIdentity(plan.script) as script:  # git runs while the facts are gathered
        facts = gather_facts(env=base, count_history=False)
        identity = script.fields()
    holder = LockHolder(
        user=facts.user,
        pid=os.getpid(),
        host=facts.hostname,
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        command=run_command("verify", str(plan.script), plan.arguments, f"verification {verification}"),
    )
    reader = StepReader(step_format, request.warmup, lambda message: reporter.notice(f"warning: {message}"))
    measured: list[Measured] = []
    arms: dict[Arm, Path] = {"baseline": empty_bank, "tuned": plan.bank}
    found: dict[Arm, list[_Bank]] = {arm: [] for arm in arms}
    with DeviceLock(device).acquire(holder), BankLock(plan.bank).acquire(holder, shared=True):  # no restore meanwhile
        for repeat in range(1, request.repeats + 1):
            for arm, bank in arms.items():
                link = VerifyLink(verification=verification, arm=arm, repeat=repeat, tuning_run=plan.tuning_run)
                manifest, seen = _one_run(request, plan, store, reporter, base, facts, identity, device, bank, link)
                took = f"{manifest.duration_s:.1f} s" if manifest.duration_s is not None else "?"
                reporter.notice(f"{arm} {repeat}/{request.repeats}: run {manifest.id} {manifest.status.value} in {took}")
                _stop_on_failure(manifest, store)
                found[arm].append(seen)
                log = store.run_dir(manifest.id) / manifest.log
                measured.append(reader.read(manifest.id, arm, repeat, log, seen.sha256))
    evidence = _evidence(identity, arms, found, plan, facts)
    report = _report(request, plan, verification, measured, reader, evidence)
    atomic_write_text(directory / "report.json", dump_json(report))
    return report


def _evidence(
    identity: dict[str, Any], arms: dict[Arm, Path], found: dict[Arm, list[_Bank]], plan: _Plan, facts: HostFacts
) -> Evidence:
    commit = identity.get("git_commit")
    return Evidence(
        script_sha256=str(identity["script_sha256"]),
        git_commit=str(commit) if commit else None,
        banks=[arm_evidence(arm, str(bank), [(b.sha256, b.files) for b in found[arm]]) for arm, bank in arms.items()],
        result_files=result_files(plan.result_files),
        fingerprint=fingerprint_of(facts),
    )


def _check_gates(request: VerifyRequest) -> None:
    given = request.gates.given()
    if given and request.repeats < 2:
        raise UsageError(
            f"{given[0]} needs --repeats 2 or more: with one run per arm the interval covers step noise only, "
            "not run-to-run variation, so no gate can be judged"
        )


def _plan(request: VerifyRequest, store: RunStore) -> _Plan:
    if request.run is not None:
        return _plan_from_run(request, store)
    if request.script is None or request.bank is None:
        raise UsageError("verify needs SCRIPT and --bank PATH, or --run RUN")
    check_script(request.script, request.python)
    framework = _framework(request.script)
    return _Plan(request.script, request.arguments, _bank(request.bank, os.getcwd()), None, request.python, [], framework)


def _plan_from_run(request: VerifyRequest, store: RunStore) -> _Plan:
    """Script, arguments and interpreter from the tuning run; the bank too, unless --bank names it."""
    if request.script is not None:
        raise UsageError("--run takes the script and its arguments from the run: give no SCRIPT")
    tuning = store.resolve(request.run or "", kind=TUNING)
    if tuning.kind != "tune":
        raise InputError(tuning.id, "is a verify run, not a tuning run")
    if tuning.offline is not None and tuning.framework is None:
        raise InputError(tuning.id, "tuned a model file with the offline CLI: verify runs a training script (SCRIPT --bank)")
    given = tuning.facts.environment.get("TUNE_BANK_PATH")
    if request.bank is not None:
        bank = _bank(request.bank, os.getcwd())
    elif given:
        bank = _bank(Path(given), tuning.working_directory)
    else:
        raise InputError(tuning.id, "tuned into AOE's default bank (no TUNE_BANK_PATH): pass --bank with the directory to use")
    python = tuning.command[0] if tuning.script.endswith(".py") else request.python
    check_script(Path(tuning.script), python)
    framework = Framework(tuning.framework) if tuning.framework else _framework(Path(tuning.script))
    results = list(tuning.result_files)
    return _Plan(Path(tuning.script), list(tuning.arguments), bank, tuning.id, python, results, framework)


def _framework(script: Path) -> Framework | None:
    """The script's framework where its imports tell it; None (the script runs as it is) where they do not."""
    try:
        return detect_framework(script).framework
    except AoeRunnerError:
        return None


def _bank(path: Path, cwd: str) -> Path:
    bank = resolve_against(str(path), cwd)
    if not bank.is_dir():
        raise InputError(str(path), "no such bank directory")
    return bank


def _one_run(
    request: VerifyRequest,
    plan: _Plan,
    store: RunStore,
    reporter: RunReporter,
    base: Mapping[str, str],
    facts: HostFacts,
    identity: dict[str, Any],
    device: int,
    bank: Path,
    link: VerifyLink,
) -> tuple[RunManifest, _Bank]:
    started_at = datetime.now(timezone.utc)
    run_id, run_dir = store.create_run_directory(started_at)
    with discarded_on_failure(run_dir):
        work_dir = run_dir / "work"
        work_dir.mkdir()
        changes = {"TUNE_BANK_PATH": str(bank), "ASCEND_WORK_PATH": str(work_dir), "PYTHONUNBUFFERED": "1", **FORCED_CACHE}
        if request.device is not None:
            changes["ASCEND_DEVICE_ID"] = str(request.device)
        changes = {name: value for name, value in changes.items() if base.get(name) != value}
        env = {name: value for name, value in {**base, **changes}.items() if name not in REMOVED}
        command = script_command(plan.script, plan.python, plan.arguments)
        flow = None
        if plan.framework is Framework.PYTORCH:  # the bank is used only with jit_compile=True (AOE.md §3): both arms
            report = run_dir / SWITCH_REPORT
            flow = FrameworkFlow(run_dir, work_dir, keep_workspace=False, switch_report=report)
            command = launched(plan.python, report, ["--torch-jit-compile"], plan.script, plan.arguments)
        before = take_inventory(bank, previous=store.blobs.last_inventory(bank))
        seen = _Bank(inventory_sha256(before), len(before.files))  # before the store keeps the files out of line
        manifest = RunManifest(
            id=run_id,
            kind="verify",
            status=RunStatus.RUNNING,
            **identity,
            command=command,
            framework=plan.framework.value if plan.framework else None,
            arguments=plan.arguments,
            working_directory=os.getcwd(),
            mode=None,
            device=device,
            environment=changes,
            environment_removed=[name for name in REMOVED if name in base],
            bank=str(bank),
            work_dir=str(work_dir),
            timeout_s=request.timeout_s,
            fingerprint=fingerprint_of(facts),
            facts=facts,
            verify=link,
            supervisor_pid=os.getpid(),
            started_at=started_at,
            bank_before=store.blobs.save_inventory(before),
        )
    return execute_recorded(store, manifest, env, reporter, request.grace_s, flow=flow), seen


def _stop_on_failure(manifest: RunManifest, store: RunStore) -> None:
    where = f"run {manifest.id} ({manifest.verify.arm} {manifest.verify.repeat})" if manifest.verify else manifest.id
    log = store.run_dir(manifest.id) / manifest.log
    if manifest.status is RunStatus.INTERRUPTED:
        raise Interrupted(f"{where} was interrupted ({manifest.stopped_by}); log: {log}")
    if manifest.late_signal:
        raise Interrupted(f"{manifest.late_signal} arrived while {where} was being recorded; no more runs were started")
    if manifest.status is not RunStatus.SUCCEEDED:
        how = manifest.script_signal or f"exit {manifest.script_exit_code}" if manifest.status is RunStatus.FAILED else "timeout"
        raise RunFailed(f"{where} {manifest.status.value} ({how}); no verdict from a failed run; log: {log}")


def _report(
    request: VerifyRequest,
    plan: _Plan,
    verification: str,
    measured: list[Measured],
    reader: StepReader,
    evidence: Evidence,
) -> VerifyReport:
    by_arm: dict[str, list[list[float]]] = {"baseline": [], "tuned": []}
    for run in measured:
        by_arm[run.steps.arm].append(run.kept_ms)
    comparison = compare(by_arm["baseline"], by_arm["tuned"], request.threshold_pct)
    gates = evaluate(comparison, request.gates)
    warmup = f"{request.warmup} (--warmup)" if request.warmup is not None else "up to 5, at most a quarter of each run's steps"
    report = VerifyReport(
        verification=verification,
        script=str(plan.script.resolve()),
        arguments=plan.arguments,
        bank=str(plan.bank),
        tuning_run=plan.tuning_run,
        published=request.published,
        repeats=request.repeats,
        step_format=reader.format_name,
        warmup=warmup,
        runs=[run.steps for run in measured],
        comparison=comparison,
        gates=gates,
        gates_passed=all(gate.passed for gate in gates),
        evidence=evidence,
        warnings=_warnings(reader, evidence, len(measured)),
    )
    report._step_times_ms = [run.kept_ms for run in measured]
    return report


def _warnings(reader: StepReader, evidence: Evidence, runs: int) -> list[str]:
    warnings = []
    if reader.short_runs:
        warnings.append(f"{len(reader.short_runs)} of {runs} runs kept fewer than {MIN_STEPS} step times after warm-up")
    for arm in evidence.banks:
        if not arm.unchanged:
            warnings.append(f"the {arm.arm} bank changed between runs of the arm: its runs did not all use the same bank")
    return warnings
