"""One `aoe-runner tune` run from start to end: preflight, lock, bank snapshot, then a supervised, recorded run."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from aoe_runner.devlock import DeviceLock, LockHolder
from aoe_runner.errors import AoeRunnerError, ExitCode
from aoe_runner.preflight.checks import Status
from aoe_runner.preflight.facts import HostFacts, default_bank, gather_facts, resolve_against
from aoe_runner.preflight.plan import plan_for
from aoe_runner.preflight.report import check_host
from aoe_runner.runs.bank import take_inventory
from aoe_runner.runs.manifest import PreflightOutcome, RunManifest, RunStatus
from aoe_runner.runs.store import RunStore
from aoe_runner.tune.record import RunReporter, discarded_on_failure, execute_recorded, fingerprint_of, script_identity
from aoe_runner.tune.relay import TerminalOutput
from aoe_runner.tune.request import TuneRequest

BANK_SNAPSHOT = "bank-before"
WORK_DIR = "work"


class PreflightFailed(AoeRunnerError):
    exit_code = ExitCode.FINDING


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
    request: TuneRequest,
    reporter: RunReporter,
    store: RunStore,
    terminal: TerminalOutput | None = None,
    base_env: Mapping[str, str] | None = None,
) -> RunManifest:
    """Launch, supervise and record one tuning run; the manifest's exit_code is what `tune` should exit with."""
    base = dict(os.environ if base_env is None else base_env)
    request.check_script()
    store.ensure_writable()
    device = request.device_id(base)
    started_at = datetime.now(timezone.utc)
    run_id, run_dir = store.create_run_directory(started_at)
    with discarded_on_failure(run_dir):
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
    with lock:
        with discarded_on_failure(run_dir):
            manifest = _start_record(request, run_id, run_dir, facts, env, changes, outcome, started_at, device, work_dir)
        return execute_recorded(store, manifest, env, reporter, request.grace_s, terminal, inherit_fds=lock.inherited_fds())


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
        **script_identity(request.script),
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


def _work_dir(request: TuneRequest, run_dir: Path) -> Path:
    work_dir = request.work_dir.resolve() if request.work_dir else run_dir / WORK_DIR
    work_dir.mkdir(parents=True, exist_ok=True)
    return work_dir


def _preflight(facts: HostFacts, request: TuneRequest, env: Mapping[str, str], reporter: RunReporter) -> PreflightOutcome:
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
