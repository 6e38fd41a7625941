"""One `aoe-runner tune` run from start to end: preflight, lock, record, bank snapshot, supervise, record again."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from aoe_runner.devlock import DeviceLock, LockHolder
from aoe_runner.errors import AoeRunnerError, ExitCode
from aoe_runner.preflight.checks import Status
from aoe_runner.preflight.facts import HostFacts, default_bank, gather_facts, resolve_against
from aoe_runner.preflight.plan import plan_for
from aoe_runner.preflight.report import PreflightReport, check_host
from aoe_runner.proc import run_bounded
from aoe_runner.runs.bank import changes_between, sha256_of, take_inventory
from aoe_runner.runs.manifest import (
    LOG_NAME,
    Fingerprint,
    MarkerSeen,
    PreflightOutcome,
    Progress,
    RecordedResult,
    RunManifest,
    RunStatus,
)
from aoe_runner.runs.store import RunStore
from aoe_runner.tune.markers import MarkerScanner
from aoe_runner.tune.request import TuneRequest
from aoe_runner.tune.supervisor import Outcome, Streams, Supervisor
from aoe_runner.tune.watch import ResultWatcher, WatchedFile

BANK_SNAPSHOT = "bank-before"
RESULTS_COPY = "results"
WORK_DIR = "work"
GIT_TIMEOUT_S = 2.0


class PreflightFailed(AoeRunnerError):
    exit_code = ExitCode.FINDING


class TuneReporter(Protocol):
    """How a run talks to the person watching it; the CLI decides what that looks like."""

    def notice(self, message: str) -> None: ...
    def preflight(self, report: PreflightReport, forced: bool) -> None: ...
    def progress(self, progress: Progress) -> None: ...
    def marker(self, marker: MarkerSeen) -> None: ...
    def clear(self) -> None: ...


@dataclass
class DryRun:
    command: list[str]
    working_directory: str
    changes: dict[str, str]
    device: int
    bank: Path

    def describe(self) -> str:
        lines = [f"would run in {self.working_directory}:", f"  {shlex.join(self.command)}", "with these environment changes:"]
        lines += [f"  {name}={shlex.quote(value)}" for name, value in sorted(self.changes.items())]
        lines += [f"holding the lock of device {self.device}; bank {self.bank}"]
        return "\n".join(lines) + "\n"


def dry_run(request: TuneRequest, store: RunStore, base_env: Mapping[str, str] | None = None) -> DryRun:
    base = dict(os.environ if base_env is None else base_env)
    request.check_script()
    work_dir = request.work_dir.resolve() if request.work_dir else store.runs_dir / "<run id>" / WORK_DIR
    changes = request.environment_changes(base, work_dir)
    bank = bank_directory({**base, **changes}, None, request)
    return DryRun(request.command(), os.getcwd(), changes, request.device_id(base), bank)


def run_tune(
    request: TuneRequest, reporter: TuneReporter, store: RunStore, base_env: Mapping[str, str] | None = None
) -> RunManifest:
    """Launch, supervise and record one tuning run; the manifest's exit_code is what `tune` should exit with."""
    base = dict(os.environ if base_env is None else base_env)
    request.check_script()
    store.ensure_writable()
    device = request.device_id(base)
    started_at = datetime.now(timezone.utc)
    run_id, run_dir = store.create_run_directory(started_at)
    with _discarded_on_failure(run_dir):
        work_dir = _work_dir(request, run_dir)
        changes = request.environment_changes(base, work_dir)
        env = {**base, **changes}
        if request.bank is not None and not request.bank.exists():
            request.bank.mkdir(parents=True)
            reporter.notice(f"created the bank directory {request.bank}")
        facts = gather_facts(env=env)
        outcome = _preflight(facts, request, env, reporter)
        holder = LockHolder(
            user=facts.user,
            pid=os.getpid(),
            host=facts.hostname,
            started_at=started_at.isoformat(timespec="seconds"),
            command=f"aoe-runner tune {shlex.join([str(request.script), *request.arguments])} (run {run_id})",
        )
        lock = DeviceLock(device).acquire(holder)
    with lock, store.supervising(run_id):
        with _discarded_on_failure(run_dir):
            manifest = _start_record(request, run_id, run_dir, facts, env, changes, outcome, started_at, device, work_dir)
        store.save(manifest)
        reporter.notice(f"run {run_id}: {shlex.join(manifest.command)}")
        reporter.notice(f"recording to {run_dir}")
        outcome_of_script = _supervise(request, manifest, env, run_dir, reporter)
        _record_end(manifest, outcome_of_script, Path(manifest.bank))
        store.save(manifest)
    return manifest


@contextmanager
def _discarded_on_failure(run_dir: Path) -> Iterator[None]:
    """Until the script starts, a failure or Ctrl-C leaves no record behind."""
    try:
        yield
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise


def _start_record(
    request: TuneRequest,
    run_id: str,
    run_dir: Path,
    facts: HostFacts,
    env: Mapping[str, str],
    changes: dict[str, str],
    preflight: PreflightOutcome,
    started_at: datetime,
    device: int,
    work_dir: Path,
) -> RunManifest:
    """The manifest as written before the script starts, with the bank inventoried and copied into the record."""
    bank = bank_directory(env, facts, request)
    return RunManifest(
        id=run_id,
        status=RunStatus.RUNNING,
        script=str(request.script.resolve()),
        script_sha256=sha256_of(request.script),
        **_git_state(request.script),
        command=request.command(),
        arguments=request.arguments,
        working_directory=os.getcwd(),
        mode=request.mode,
        device=device,
        environment=changes,
        bank=str(bank),
        work_dir=str(work_dir),
        timeout_s=request.timeout_s,
        fingerprint=fingerprint_of(facts),
        facts=facts,
        preflight=preflight,
        supervisor_pid=os.getpid(),
        started_at=started_at,
        bank_before=take_inventory(bank, snapshot_to=run_dir / BANK_SNAPSHOT),
    )


def bank_directory(env: Mapping[str, str], facts: HostFacts | None, request: TuneRequest) -> Path:
    """The directory this run's bank lives in (AOE.md §1 priority), as far as it can be known beforehand."""
    if env.get("TUNE_BANK_PATH"):
        return resolve_against(env["TUNE_BANK_PATH"], os.getcwd())
    home = env.get("HOME") or str(Path.home())
    path, _ = default_bank(env, home, facts.soc if facts else None, request.mode.value)
    return path.parent if path.name == "<soc_version>" else path


def fingerprint_of(facts: HostFacts) -> Fingerprint:
    return Fingerprint(
        cann_version=facts.cann.version,
        soc=facts.soc,
        driver_version=facts.cann.driver_version,
        python=facts.python,
        hostname=facts.hostname,
    )


def _work_dir(request: TuneRequest, run_dir: Path) -> Path:
    work_dir = request.work_dir.resolve() if request.work_dir else run_dir / WORK_DIR
    work_dir.mkdir(parents=True, exist_ok=True)
    return work_dir


def _preflight(facts: HostFacts, request: TuneRequest, env: Mapping[str, str], reporter: TuneReporter) -> PreflightOutcome:
    plan = plan_for(request.mode.value, 1, request.model_memory, env)
    report = check_host(facts, plan)
    failed = [check.id for check in report.checks if check.status is Status.FAIL]
    warned = [check.id for check in report.checks if check.status is Status.WARN]
    if failed or warned:
        reporter.preflight(report, request.force)
    if failed and not request.force:
        raise PreflightFailed(
            f"preflight failed ({', '.join(failed)}): nothing was launched; fix these or pass --force to run anyway"
        )
    return PreflightOutcome(failed=failed, warned=warned, forced=bool(failed))


def _supervise(
    request: TuneRequest, manifest: RunManifest, env: Mapping[str, str], run_dir: Path, reporter: TuneReporter
) -> Outcome:
    watcher = ResultWatcher(Path(manifest.work_dir))
    scanner = MarkerScanner()

    def on_output(data: bytes) -> None:
        scanner.feed(data)
        while scanner.new:
            reporter.marker(scanner.new.pop(0))

    def on_tick() -> None:
        if watcher.poll():
            reporter.progress(watcher.progress)

    with open(run_dir / LOG_NAME, "wb", buffering=0) as log:
        supervisor = Supervisor(
            manifest.command,
            env,
            manifest.working_directory,
            Streams(out_fd=1, err_fd=2, log_fd=log.fileno(), before_relay=reporter.clear),
            timeout_s=request.timeout_s,
            grace_s=request.grace_s,
            on_output=on_output,
            on_tick=on_tick,
        )
        outcome = supervisor.run(on_start=lambda pid: setattr(manifest, "child_pid", pid))
    reporter.clear()
    for problem in outcome.relay_errors:
        reporter.notice(problem)
    watcher.poll(force=True)
    reporter.progress(watcher.progress)
    manifest.markers = scanner.seen
    manifest.progress = watcher.progress
    manifest.result_files = [_record_result(watched, run_dir) for watched in watcher.files if watched.path.is_file()]
    return outcome


def _record_result(watched: WatchedFile, run_dir: Path) -> RecordedResult:
    source = watched.path
    if source.is_relative_to(run_dir):
        recorded = source
    else:  # a --work-dir outside the record: keep a copy, so the record stands alone
        recorded = run_dir / RESULTS_COPY / source.name
        recorded.parent.mkdir(exist_ok=True)
        shutil.copy2(source, recorded)
    loaded = watched.loaded
    return RecordedResult(
        source=str(source),
        recorded=recorded.relative_to(run_dir).as_posix(),
        size=recorded.stat().st_size,
        sha256=sha256_of(recorded),
        reports=len(loaded.reports) if loaded else 0,
        partial=loaded.partial if loaded else True,
        error=watched.error,
    )


def _record_end(manifest: RunManifest, outcome: Outcome, bank: Path) -> None:
    manifest.ended_at = datetime.now(timezone.utc)
    code = outcome.returncode
    manifest.script_exit_code = code if code >= 0 else None
    manifest.script_signal = signal.Signals(-code).name if code < 0 else None
    manifest.stopped_by = outcome.stopped_by
    if outcome.stopped_by == "timeout":
        manifest.status, manifest.exit_code = RunStatus.TIMED_OUT, ExitCode.TIMEOUT.value
    elif outcome.stopped_by is not None:
        manifest.status, manifest.exit_code = RunStatus.INTERRUPTED, ExitCode.INTERRUPTED.value
    elif code == 0:
        manifest.status, manifest.exit_code = RunStatus.SUCCEEDED, 0
    else:
        manifest.status, manifest.exit_code = RunStatus.FAILED, code if code > 0 else 128 - code
    manifest.bank_after = take_inventory(bank)
    manifest.bank_changes = changes_between(manifest.bank_before, manifest.bank_after)


def _git_state(script: Path) -> dict[str, object]:
    directory = str(script.resolve().parent)
    head = run_bounded(["git", "-C", directory, "rev-parse", "HEAD"], GIT_TIMEOUT_S)
    if not head.ok:
        return {"git_commit": None, "git_script_modified": None}
    status = run_bounded(["git", "-C", directory, "status", "--porcelain", "--", script.name], GIT_TIMEOUT_S)
    return {"git_commit": head.stdout.strip(), "git_script_modified": bool(status.stdout.strip()) if status.ok else None}
