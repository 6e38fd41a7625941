"""One `aoe-runner tune` run from start to end: gate (preflight), locks, bank snapshot, then a supervised, recorded run."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from aoe_runner.common.devlock import BankLock, DeviceLock, LockHolder
from aoe_runner.common.locks import run_command
from aoe_runner.common.quantities import format_duration
from aoe_runner.common.safe_text import visible
from aoe_runner.errors import AoeRunnerError, InputError, UsageError
from aoe_runner.frameworks.offline import WORKSPACE, find_cli
from aoe_runner.preflight.facts import HostFacts, default_bank, gather_facts, resolve_against
from aoe_runner.runs.bank import take_inventory
from aoe_runner.runs.flows import CampaignLink
from aoe_runner.runs.history import RunStore
from aoe_runner.runs.manifest import PreflightOutcome, RunManifest, RunStatus
from aoe_runner.tune.flows import PlannedRun, plan_run
from aoe_runner.tune.gate import Gate, refuse_unforcible, run_preflight
from aoe_runner.tune.record import RunReporter, ScriptIdentity, discarded_on_failure, execute_recorded, fingerprint_of
from aoe_runner.tune.relay import TerminalOutput
from aoe_runner.tune.request import TuneRequest
from aoe_runner.tune.signals import CountedSignals

WORK_DIR = "work"
CAMPAIGN_VARIABLE = "AOE_RUNNER_CAMPAIGN"


@dataclass
class DryRun:
    """Everything a real run would do, and whether it would be allowed to start."""

    planned: PlannedRun
    working_directory: str
    changes: dict[str, str]
    gate: Gate
    steps: list[str] = field(default_factory=list)
    blocked_by: list[str] = field(default_factory=list)  # what would refuse the run besides preflight
    notes: list[str] = field(default_factory=list)

    @property
    def would_start(self) -> bool:
        return not self.gate.refused and not self.blocked_by

    def describe(self) -> str:
        lines = []
        for number, phase in enumerate(self.planned.phases, start=1):
            where = phase.working_directory or self.working_directory
            label = f"phase {number} ({phase.name}) " if len(self.planned.phases) > 1 else ""
            lines += [f"would run {label}in {where}:", f"  {shlex.join(phase.command)}"]
        lines += [*self.notes, *self.planned.notes, "with these environment changes:"]
        lines += [f"  {name}={shlex.quote(value)}" for name, value in sorted(self.changes.items())]
        lines += self.steps + [self.gate.verdict(), *self.blocked_by]
        lines.append("a real run would start" if self.would_start else "a real run would be refused: nothing would be launched")
        return "\n".join(visible(line) for line in lines) + "\n"


def dry_run(request: TuneRequest, store: RunStore, base_env: Mapping[str, str] | None = None) -> DryRun:
    base = dict(os.environ if base_env is None else base_env)
    refuse_unforcible(request)
    campaign_link(base)  # a real run refuses a variable it cannot read: so does its dry run
    resumed = _resumed(request, store)
    work_dir = _planned_work_dir(request, store.runs_dir / "<run id>", resumed)
    blocked = []
    try:
        cli = offline_cli(request, base)
    except InputError as error:
        cli, blocked = "aoe", [error.message]
    planned = plan_run(request, store.runs_dir / "<run id>", work_dir, cli, store.runs_dir)
    changes = {**request.environment_changes(base, work_dir), **planned.environment}
    env = {**base, **changes}
    facts = gather_facts(env=env)
    gate = run_preflight(facts, request, env)
    bank = bank_directory(env, facts, request)
    device = request.device_id(base)
    plan = DryRun(
        planned,
        os.getcwd(),
        changes,
        gate,
        blocked_by=blocked,
        notes=[request.framework_note or ""][: bool(request.framework_note)],
    )
    if request.bank is not None and not request.bank.exists():
        plan.steps.append(f"would create the bank directory {request.bank}")
    plan.steps.append(
        f"would record the run in {store.runs_dir / '<run id>'}, keeping the bank's new contents in {store.blobs.blobs}"
    )
    for lock, what, shared in ((DeviceLock(device), f"device {device}", False), (BankLock(bank), f"the bank {bank}", True)):
        holder = _holder_or_problem(lock, shared)
        plan.steps.append(f"would hold the lock of {what}" + (f" (now held: {holder})" if holder else " (free now)"))
        if holder:
            plan.blocked_by.append(f"{what} is held by another run ({holder})")
    if request.timeout_s is not None:
        plan.steps.append(
            f"would stop the script after {format_duration(request.timeout_s)} (--timeout), then SIGKILL "
            f"after {format_duration(request.grace_s)} more (--grace)"
        )
    return plan


def run_tune(
    request: TuneRequest,
    reporter: RunReporter,
    store: RunStore,
    terminal: TerminalOutput | None = None,
    base_env: Mapping[str, str] | None = None,
    signals: CountedSignals | None = None,
) -> RunManifest:
    """Launch, supervise and record one tuning run; the manifest's exit_code is what `tune` should exit with.

    `signals`: the command's (see execute_recorded)."""
    base = dict(os.environ if base_env is None else base_env)
    refuse_unforcible(request)
    cli = offline_cli(request, base)  # before anything is created: a run that needs it cannot go without it
    resumed = _resumed(request, store)
    store.ensure_writable()
    device = request.device_id(base)
    started_at = datetime.now(timezone.utc)
    link = campaign_link(base)
    run_id, run_dir = store.create_run_directory(started_at)
    with discarded_on_failure(run_dir), ExitStack() as locks:
        identity = locks.enter_context(ScriptIdentity(request.script))  # git runs while preflight does
        work_dir = _planned_work_dir(request, run_dir, resumed)
        work_dir.mkdir(parents=True, exist_ok=True)
        planned = plan_run(request, run_dir, work_dir, cli, store.runs_dir)
        changes = {**request.environment_changes(base, work_dir), **planned.environment}
        env = {**base, **changes}
        facts = gather_facts(env=env, count_history=False)  # the history's size is preflight's to show
        gate = run_preflight(facts, request, env)
        if gate.outcome.failed or gate.outcome.warned:
            reporter.preflight(gate.report, request.force)
        if gate.refused:
            raise gate.refusal()
        holder = LockHolder(
            user=facts.user,
            pid=os.getpid(),
            host=facts.hostname,
            started_at=started_at.isoformat(timespec="seconds"),
            command=run_command("tune", str(request.script), request.arguments, f"run {run_id}"),
        )
        device_lock = locks.enter_context(DeviceLock(device).acquire(holder))
        bank_lock = locks.enter_context(_share_bank(BankLock(bank_directory(env, facts, request)), holder, reporter))
        if request.bank is not None and not request.bank.exists():
            request.bank.mkdir(parents=True)
            reporter.notice(f"created the bank directory {request.bank}")
        writing = locks.enter_context(_Writing(store, reporter))  # no collect removes a blob before the manifest names it
        if request.framework_note:
            reporter.notice(request.framework_note)
        for note in planned.notes:
            reporter.notice(f"note: {note}")
        manifest = _start_record(
            request, run_id, identity, store, facts, env, changes, gate.outcome, started_at, device, work_dir, planned
        )
        manifest.campaign = link
        held = device_lock.inherited_fds() + bank_lock.inherited_fds()
        locks_held = locks.pop_all()
    with locks_held:
        return execute_recorded(
            store, manifest, env, reporter, request.grace_s, terminal, held, writing.release, signals, planned.flow
        )


def campaign_link(env: Mapping[str, str]) -> CampaignLink | None:
    """The campaign job this run is for, from AOE_RUNNER_CAMPAIGN (set by `campaign run`); UsageError when it is
    not what `campaign run` writes."""
    text = env.get(CAMPAIGN_VARIABLE)
    if not text:
        return None
    try:
        given = json.loads(text)
        return CampaignLink(campaign=str(given["campaign"]), job=str(given["job"]), attempt=str(given["attempt"]))
    except (ValueError, KeyError, TypeError):
        raise UsageError(f"{CAMPAIGN_VARIABLE}: not what 'aoe-runner campaign run' sets; unset it") from None


def offline_cli(request: TuneRequest, env: Mapping[str, str]) -> str | None:
    """The offline CLI, for a run that needs it (InputError, exit 4, when it is not there); None for the others."""
    if not request.uses_cli:
        return None
    return find_cli(request.aoe_cli, env, Path(env.get("HOME") or str(Path.home())))


def _resumed(request: TuneRequest, store: RunStore) -> RunManifest | None:
    """The run --reload resumes: an offline subgraph tuning of the same model whose workspace is still there."""
    if request.reload_of is None:
        return None
    resumed = store.resolve(request.reload_of, kind="tune")
    offline = resumed.offline
    if offline is None or request.model is None or offline.model != str(request.model.path):
        model = request.model.path if request.model else "?"
        raise UsageError(f"--reload {request.reload_of}: run {resumed.id} did not tune the model {model}")
    if resumed.mode is not request.mode:
        raise UsageError(f"--reload {request.reload_of}: run {resumed.id} was a {resumed.mode_label} tuning, not subgraph")
    if not (Path(resumed.work_dir) / WORKSPACE).is_dir():
        raise InputError(
            str(Path(resumed.work_dir) / WORKSPACE),
            f"--reload: run {resumed.id}'s workspace is gone (a run that succeeds removes it unless --keep-workspace)",
        )
    return resumed


def _planned_work_dir(request: TuneRequest, run_dir: Path, resumed: RunManifest | None) -> Path:
    """The work directory: the resumed run's (its aoe_workspace/), --work-dir, or one inside the record."""
    if resumed is not None:
        return Path(resumed.work_dir)
    return request.work_dir.resolve() if request.work_dir else run_dir / WORK_DIR


class _Writing:
    """The blob store's writer lock, released once the run's manifest is saved (or when the start fails)."""

    def __init__(self, store: RunStore, reporter: RunReporter) -> None:
        self._held: ExitStack | None = ExitStack()
        waiting = f"waiting for a runs prune or runs rm to finish with the stored bank contents ({store.blobs.home})"
        self._held.enter_context(store.blobs.writing(lambda: reporter.notice(waiting)))

    def __enter__(self) -> _Writing:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def release(self) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None


def _start_record(
    request: TuneRequest,
    run_id: str,
    identity: ScriptIdentity,
    store: RunStore,
    facts: HostFacts,
    env: Mapping[str, str],
    changes: dict[str, str],
    preflight: PreflightOutcome,
    started_at: datetime,
    device: int,
    work_dir: Path,
    planned: PlannedRun,
) -> RunManifest:
    """The manifest as written before the script starts, with the bank inventoried and its new contents stored."""
    bank = bank_directory(env, facts, request)
    previous = store.blobs.last_inventory(bank)
    inventory = take_inventory(bank, store.blobs, previous, rehash=request.rehash)
    return RunManifest(
        id=run_id,
        status=RunStatus.RUNNING,
        **identity.fields(),
        command=planned.command,
        phases=planned.phases,
        framework=request.framework.value if request.framework else None,
        framework_source=request.framework_source if request.framework else None,
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
        bank_before=store.blobs.save_inventory(inventory),
    )


def bank_directory(env: Mapping[str, str], facts: HostFacts | None, request: TuneRequest) -> Path:
    """The directory this run's bank lives in (AOE.md §1 priority), as far as it can be known beforehand."""
    if env.get("TUNE_BANK_PATH"):
        return resolve_against(env["TUNE_BANK_PATH"], os.getcwd())
    home = env.get("HOME") or str(Path.home())
    path, _ = default_bank(env, home, facts.soc if facts else None, request.mode.value)
    return path.parent if path.name == "<soc_version>" else path


def _share_bank(lock: BankLock, holder: LockHolder, reporter: RunReporter) -> BankLock:
    """Tuning runs may share a bank (AOE supports it); a restore may not run beside them."""
    other = lock.holder()
    lock.acquire(holder, shared=True)
    if other is not None:
        reporter.notice(
            f"warning: another run tunes {lock.bank} at the same time ({other.describe()}); "
            "this run's bank changes will include what that run writes"
        )
    return lock


def _holder_or_problem(lock: DeviceLock | BankLock, shared: bool) -> str | None:
    try:
        holder = lock.holder(shared=shared)
    except AoeRunnerError as error:
        return f"unusable: {error.message}"
    return holder.describe() if holder else None
