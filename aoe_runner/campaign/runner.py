"""Running a campaign: jobs in the order `after` allows, on an engine (ray_engine.RayEngine), recorded as they go.

A job starts once every job it waits for succeeded (or was skipped as done before); one that waits for a job that
did not succeed is skipped, saying which. A job that succeeded before, in a campaign of the same name, with the
same fingerprint, is skipped (`rerun` names jobs to run again anyway). `max_parallel` caps the jobs running at
once; Ray's resources cap them too. Ctrl-C (or SIGTERM) cancels every running job: each tune gets SIGINT, records
its run as interrupted within its --grace, and the campaign waits for that before it records itself and ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from aoe_runner.campaign.plan import CampaignPlan, JobNeeds
from aoe_runner.campaign.record import DONE, Attempt, CampaignRecord, CampaignStore, JobRecord, JobState, now
from aoe_runner.campaign.spec import Job
from aoe_runner.common.quantities import parse_duration

INTERRUPTED = 130
WAIT_S = 1.0
STOP_MARGIN_S = 60.0  # beyond the longest --grace, for a cancelled job to record its run


@dataclass(frozen=True)
class Submission:
    """One job as an engine runs it: `aoe-runner ARGV` with ENV added, stopped within grace_s of a cancellation."""

    argv: list[str]
    env: dict[str, str]
    grace_s: float
    link: dict[str, Any]  # campaign, job, attempt: AOE_RUNNER_CAMPAIGN for the tune
    retries: int


class Engine(Protocol):
    def submit(self, needs: JobNeeds, submission: Submission) -> Any: ...
    def finished(self, handles: list[Any], timeout_s: float) -> list[Any]: ...
    def outcome(self, handle: Any) -> tuple[int | None, str | None]: ...
    def cancel(self, handle: Any) -> None: ...
    def heard(self) -> dict[str, dict[int, dict[str, Any]]]: ...


@dataclass
class RunOptions:
    max_parallel: int | None = None
    fail_fast: bool = False
    retries: int = 1
    rerun: frozenset[str] = frozenset()
    rerun_all: bool = False
    tune_options: tuple[str, ...] = ()  # --force, --skip CHECK: passed to every tune


@dataclass
class _Running:
    job: Job
    handle: Any
    grace_s: float


@dataclass
class CampaignRun:
    plan: CampaignPlan
    record: CampaignRecord
    store: CampaignStore
    engine: Engine
    options: RunOptions
    say: Callable[[str], None]
    show: Callable[[CampaignRecord], None] = lambda record: None  # the live view, each second
    running: dict[str, _Running] = field(default_factory=dict)
    failed_fast: str | None = None  # why --fail-fast stops the campaign, once a job did not succeed
    stopping: bool = False

    def run(self) -> int:
        """Run every job to its end; the exit code: 0 when all succeeded (or were done before), 1 when one did not,
        130 when interrupted."""
        self._skip_done_before()
        self.store.save(self.record)
        try:
            while not self._all_done() and self.failed_fast is None:
                self._start_ready()
                self._finish_each(self.engine.finished([r.handle for r in self.running.values()], WAIT_S))
                self._hear()
                self.store.save(self.record)
                self.show(self.record)
            if self.failed_fast is not None:
                self._stopping(self.failed_fast)
        except KeyboardInterrupt as stop:
            self.record.stopped_by = stop.args[0] if stop.args and isinstance(stop.args[0], str) else "SIGINT"
            self._stopping("the campaign was interrupted")
        if self.record.ended_at is None:
            self.record.ended_at = now()
            self.store.save(self.record)
        if self.record.stopped_by:
            return INTERRUPTED
        return 0 if self.record.state == "succeeded" else 1

    def _stopping(self, why: str) -> None:
        """Stop every job and record the campaign's end, deaf to further signals meanwhile: a second Ctrl-C must not
        leave the record half-told (the first already stops everything)."""
        import signal

        numbers = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        saved = {number: signal.signal(number, lambda *_: None) for number in numbers}
        try:
            self.store.save(self.record)
            self._stop_all(why)
            self.record.ended_at = now()
            self.store.save(self.record)
        finally:
            for number, handler in saved.items():
                signal.signal(number, handler)

    def _finish_each(self, handles: list[Any]) -> None:
        for handle in handles:
            if any(running.handle is handle for running in self.running.values()):  # not finished meanwhile
                self._finish(handle)

    # -- starting -------------------------------------------------------------------------------

    def _skip_done_before(self) -> None:
        successes = self.store.successes(self.record.name)
        for job in self.plan.campaign.jobs:
            record = self.record.job(job.name)
            if self.options.rerun_all or job.name in self.options.rerun:
                continue
            earlier = successes.get((job.name, record.fingerprint))
            if earlier is not None:
                campaign, run = earlier
                record.state, record.earlier_run = JobState.SKIPPED, run
                record.why = f"succeeded in campaign {campaign} (run {run}) with the same fingerprint"
                self.say(f"job {job.name}: skipped, {record.why}")

    def _start_ready(self) -> None:
        for job in self.plan.campaign.jobs:
            record = self.record.job(job.name)
            if record.state is not JobState.PENDING:
                continue
            waits = [self.record.job(name) for name in job.after]
            failed = [w.name for w in waits if w.state in DONE and not _counts_as_done(w)]
            if failed:
                record.state, record.why = JobState.SKIPPED, f"waits for {', '.join(failed)}, which did not succeed"
                self.say(f"job {job.name}: skipped, it {record.why}")
                continue
            if not all(_counts_as_done(w) for w in waits):
                continue
            if self.options.max_parallel is not None and len(self.running) >= self.options.max_parallel:
                return
            self._submit(job, record)

    def _submit(self, job: Job, record: JobRecord) -> None:
        needs = next(need for need in self.plan.needs if need.job == job.name)
        argv = [*job.tune_argv()]
        if self.options.tune_options:
            split = argv.index("--") if "--" in argv else len(argv)
            argv[split:split] = list(self.options.tune_options)
        grace_s = parse_duration(job.grace, "grace") if job.grace else 10.0
        link = {"campaign": self.record.id, "job": job.name, "attempt": ""}  # the task names its attempt
        handle = self.engine.submit(needs, Submission(argv, dict(job.env), grace_s, link, self.options.retries))
        self.running[job.name] = _Running(job, handle, grace_s)
        record.state = JobState.RUNNING
        self.say(f"job {job.name}: submitted ({needs.describe()})")

    # -- hearing and ending ---------------------------------------------------------------------

    def _hear(self) -> None:
        """Attempts as the tasks told them: host, device, run, last result file."""
        for name, attempts in self.engine.heard().items():
            record = self.record.job(name)
            for number, news in sorted(attempts.items()):
                while len(record.attempts) < number:
                    record.attempts.append(Attempt(number=len(record.attempts) + 1))
                attempt = record.attempts[number - 1]
                first = attempt.host is None and news.get("host")
                attempt.host = news.get("host", attempt.host)
                attempt.node = news.get("node", attempt.node)
                attempt.device = news.get("device", attempt.device)
                attempt.run = news.get("run", attempt.run)
                attempt.last_result_file = news.get("last_result_file", attempt.last_result_file)
                attempt.started_at = _moment(news.get("started_at")) or attempt.started_at
                attempt.ended_at = _moment(news.get("ended_at")) or attempt.ended_at
                if "code" in news:
                    attempt.exit_code = news["code"]
                attempt.problem = news.get("problem", attempt.problem)
                if first:
                    self.say(f"job {name}: running on {attempt.host}, device {attempt.device or '?'} (attempt {number})")

    def _finish(self, handle: Any) -> None:
        name = next(name for name, running in self.running.items() if running.handle is handle)
        del self.running[name]
        code, problem = self.engine.outcome(handle)
        self._hear()
        record = self.record.job(name)
        if code is None and record.attempts and record.attempts[-1].exit_code is not None:
            code = record.attempts[-1].exit_code  # a cancelled task that still recorded how its tune ended
        if code == 0:
            record.state = JobState.SUCCEEDED
        elif code == INTERRUPTED:
            record.state, record.why = JobState.STOPPED, "its tune was interrupted"
        elif code is not None:
            said = record.attempts[-1].problem if record.attempts and record.run is None else None
            record.state, record.why = JobState.FAILED, f"its tune exited {code}" + (f": {said}" if said else "")
        elif problem == "cancelled":
            record.state, record.why = JobState.STOPPED, "cancelled before its tune started"
        else:
            record.state, record.why = JobState.LOST, problem or "Ray could not run it"
            if record.attempts:
                record.attempts[-1].problem = record.attempts[-1].problem or record.why
        run = record.run
        self.say(
            f"job {name}: {record.state.value}" + (f", run {run}" if run else "") + (f" ({record.why})" if record.why else "")
        )
        if record.state is not JobState.SUCCEEDED and self.options.fail_fast and self.failed_fast is None:
            self.failed_fast = f"--fail-fast: job {name} did not succeed"  # the main loop stops the rest

    def _stop_all(self, why: str) -> None:
        """Cancel every running job and wait (bounded) for each tune to record its run: a cancelled task counts as
        ended once its tune's end is heard, or Ray says it is gone some other way. What never started says why."""
        for running in self.running.values():
            self.engine.cancel(running.handle)
        deadline = time.monotonic() + max((r.grace_s for r in self.running.values()), default=0) + STOP_MARGIN_S
        while self.running and time.monotonic() < deadline:
            try:
                finished = self.engine.finished([r.handle for r in self.running.values()], WAIT_S)
                self._hear()
                for name, running in list(self.running.items()):
                    if name not in self.running:
                        continue
                    attempts = self.record.job(name).attempts
                    if attempts and attempts[-1].ended_at is not None:
                        self._finish(running.handle)
                    elif running.handle in finished and (not attempts or self.engine.outcome(running.handle)[1] != "cancelled"):
                        self._finish(running.handle)  # cancelled before it started, or its node died
            except KeyboardInterrupt:  # a second Ctrl-C: the cancellation is under way already
                continue
        for name in list(self.running):
            record = self.record.job(name)
            record.state, record.why = JobState.STOPPED, f"{why}; its tune had not recorded its end"
        for record in self.record.jobs:
            if record.why == "its tune was interrupted":  # by this stop: say why it stopped
                record.why = f"{why}; its tune recorded its run as interrupted"
        self.running.clear()
        for record in self.record.jobs:
            if record.state is JobState.RUNNING:
                record.state = JobState.STOPPED
            if record.state is JobState.PENDING:
                record.state, record.why = JobState.STOPPED, f"never started: {why}"
        self._hear()

    def _all_done(self) -> bool:
        return not self.running and all(job.state is not JobState.PENDING for job in self.record.jobs)


def _counts_as_done(job: JobRecord) -> bool:
    """A job that waits for this one may start: it succeeded now, or before (skipped as done)."""
    return job.state is JobState.SUCCEEDED or (job.state is JobState.SKIPPED and (job.why or "").startswith("succeeded"))


def _moment(seconds: object) -> datetime | None:
    return datetime.fromtimestamp(seconds, timezone.utc) if isinstance(seconds, (int, float)) else None
