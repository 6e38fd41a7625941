"""Run one script supervised and recorded: what `tune` and every `verify` run share.

The caller builds the starting manifest (and holds the device lock); `execute_recorded` holds the run's
supervisor lock, writes the manifest, runs and relays the script, and writes the manifest again at the end.
"""

from __future__ import annotations

import shlex
import shutil
import signal
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from aoe_runner.common.files import copy_keeping_holes
from aoe_runner.common.proc import Completed, Started
from aoe_runner.common.regular_files import MAX_JSON_BYTES
from aoe_runner.errors import AoeRunnerError, ExitCode
from aoe_runner.preflight.facts import HostFacts
from aoe_runner.preflight.report import PreflightReport
from aoe_runner.runs.bank import changes_between, sha256_of, take_inventory
from aoe_runner.runs.history import RunStore
from aoe_runner.runs.manifest import LOG_NAME, Fingerprint, MarkerSeen, Progress, RecordedResult, RunManifest, RunStatus
from aoe_runner.tune.aoe_codes import CodeScanner
from aoe_runner.tune.aoe_codes import describe as describe_code
from aoe_runner.tune.markers import MarkerScanner
from aoe_runner.tune.phases import Flow, Hooks, run_phases
from aoe_runner.tune.relay import TerminalOutput
from aoe_runner.tune.signals import CountedSignals
from aoe_runner.tune.supervisor import Outcome, Streams
from aoe_runner.tune.watch import BackgroundWatcher, ResultWatcher, WatchedFile

RESULTS_COPY = "results"
GIT_TIMEOUT_S = 2.0


class RunReporter(Protocol):
    """How a run talks to the person watching it; the CLI decides what that looks like."""

    def notice(self, message: str) -> None: ...
    def preflight(self, report: PreflightReport, forced: bool) -> None: ...
    def progress(self, progress: Progress) -> None: ...
    def alive(self, elapsed_s: float, since_result_s: float | None) -> None: ...
    def marker(self, marker: MarkerSeen) -> None: ...
    def clear(self) -> None: ...


def execute_recorded(
    store: RunStore,
    manifest: RunManifest,
    env: Mapping[str, str],
    reporter: RunReporter,
    grace_s: float,
    terminal: TerminalOutput | None = None,
    inherit_fds: Sequence[int] = (),
    on_recorded: Callable[[], None] = lambda: None,
    signals: CountedSignals | None = None,
    flow: Flow | None = None,
) -> RunManifest:
    """Run the manifest's phases (phases.run_phases) to their end and record them; the device lock, if any, is the
    caller's.

    terminal: where the script's output is relayed; None keeps it in the log only, and says nothing about the start.
    inherit_fds (the device lock) are passed to the script, so they stay open while any process of it lives.
    Once the script has started, its outcome is recorded whatever happens: a signal while recording is noted
    in `late_signal`, and a full or read-only disk gives a smaller record and warnings, never a lost outcome.
    `signals`: the command's own (`tune` keeps them counted until it ends); without, they are counted for the
    length of this call.
    """
    if signals is None:
        with CountedSignals() as own:
            return execute_recorded(store, manifest, env, reporter, grace_s, terminal, inherit_fds, on_recorded, own, flow)
    signals.stop_cancelling()
    run_dir = store.run_dir(manifest.id)
    with store.supervising(manifest.id):
        store.save_start(manifest)
        on_recorded()  # the start is on disk: e.g. the blobs it names are safe from a collect
        if terminal is not None:
            reporter.notice(f"run {manifest.id}: {shlex.join(manifest.command)}")
            reporter.notice(f"recording to {run_dir}")
        outcome = _supervise(manifest, env, run_dir, reporter, grace_s, terminal, inherit_fds, signals, flow)
        _record_end(manifest, outcome)
        if flow is not None:
            flow.finish(manifest)
        with store.blobs.writing():  # the bank's new contents are kept: no collect until the manifest names them
            _record_bank(manifest, store)
            manifest.late_signal = outcome.late_signal or _late(manifest, signals)
            _save_end(store, manifest, reporter)
        if manifest.late_signal is None and (late := _late(manifest, signals)):  # while the end was being written
            manifest.late_signal = late
            _save_end(store, manifest, reporter)
    return manifest


def _late(manifest: RunManifest, signals: CountedSignals) -> str | None:
    """The first signal that arrived since the supervisor's loop ended (which can see the script's end without
    reading the pipe again), when the script had ended on its own; None if none."""
    arrived = signals.take()
    return signal.Signals(arrived[0]).name if arrived and manifest.stopped_by is None else None


def _save_end(store: RunStore, manifest: RunManifest, reporter: RunReporter) -> None:
    for problem in store.save_end(manifest):
        if problem not in manifest.warnings:
            manifest.warnings.append(problem)
            reporter.notice(f"warning: {problem}")


@contextmanager
def discarded_on_failure(run_dir: Path) -> Iterator[None]:
    """Until the script starts, a failure or Ctrl-C leaves no record behind."""
    try:
        yield
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise


def fingerprint_of(facts: HostFacts) -> Fingerprint:
    return Fingerprint(
        cann_version=facts.cann.version,
        cann_inner_version=facts.cann.inner_version,
        soc=facts.soc,
        driver_version=facts.cann.driver_version,
        python=facts.python,
        hostname=facts.hostname,
    )


class ScriptIdentity:
    """The manifest fields that say which script ran: path, hash, and its git commit when in a repository.

    git starts when this is made and is collected by fields(), so that it runs while preflight does. One
    `git status --porcelain=v2 --branch` gives both the commit and whether the script differs from it;
    `--no-optional-locks` keeps git from taking the repository's index lock while the user works in it;
    `--literal-pathspecs` reads the script's name as a name (`train[1].py` is no pattern for `train1.py`);
    `--no-ahead-behind` spares counting commits against the upstream (seconds on a big divergence); an untracked
    script counts as modified even where it is ignored or the repository hides untracked files.
    """

    def __init__(self, script: Path) -> None:
        self.script = script.resolve()
        directory = str(self.script.parent)
        git = ["git", "--no-optional-locks", "--literal-pathspecs", "-C", directory]
        status = ["status", "--porcelain=v2", "--branch", "--no-ahead-behind", "--untracked-files=all", "--ignored=matching"]
        self._git = Started([*git, *status, "--", self.script.name], GIT_TIMEOUT_S)

    def fields(self) -> dict[str, Any]:
        commit, modified = _git_state(self._git.finish())
        return {
            "script": str(self.script),
            "script_sha256": sha256_of(self.script),
            "git_commit": commit,
            "git_script_modified": modified,
        }

    def __enter__(self) -> ScriptIdentity:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._git.cancel()


def _git_state(status: Completed) -> tuple[str | None, bool | None]:
    """(commit, script modified) from porcelain v2; (None, None) outside a repository or before its first commit."""
    if not status.ok:
        return None, None
    lines = status.stdout.splitlines()
    heads = [line.removeprefix("# branch.oid ") for line in lines if line.startswith("# branch.oid ")]
    if not heads or heads[0] == "(initial)":
        return None, None
    return heads[0].strip(), any(line and not line.startswith("#") for line in lines)


def _supervise(
    manifest: RunManifest,
    env: Mapping[str, str],
    run_dir: Path,
    reporter: RunReporter,
    grace_s: float,
    terminal: TerminalOutput | None,
    inherit_fds: Sequence[int],
    signals: CountedSignals,
    flow: Flow | None,
) -> Outcome:
    watcher = ResultWatcher(Path(manifest.work_dir))
    background = BackgroundWatcher(watcher)
    scanner = MarkerScanner()
    codes = CodeScanner()
    shown: set[str] = set()

    def on_output(data: bytes) -> None:
        scanner.feed(data)
        while scanner.new:
            reporter.marker(scanner.new.pop(0))
        codes.feed(data)
        while codes.new:
            reporter.notice(f"warning: {describe_code(codes.new.pop(0))}")

    started = time.monotonic()
    last_result: list[float | None] = [None]  # when a result file last changed: None, none yet

    def on_tick() -> None:
        now = time.monotonic()
        if background.tick():
            last_result[0] = now
            reporter.progress(watcher.progress)
        reporter.alive(now - started, None if last_result[0] is None else now - last_result[0])
        for problem in watcher.problems:
            if problem not in shown:
                shown.add(problem)
                reporter.notice(f"warning: {problem}")

    with open(run_dir / LOG_NAME, "wb", buffering=0) as log:
        streams = Streams(
            out=terminal.out if terminal else None,
            err=terminal.err if terminal else None,
            log_fd=log.fileno(),
            before_relay=reporter.clear,
        )
        hooks = Hooks(on_output, on_tick, reporter.notice, lambda pid: setattr(manifest, "child_pid", pid))
        outcome = run_phases(manifest, env, streams, grace_s, hooks, inherit_fds, signals, flow)
    reporter.clear()
    if terminal is not None:
        outcome.problems += terminal.problems()
    if outcome.leftovers:
        named = ", ".join(leftover.describe() for leftover in outcome.leftovers)
        outcome.problems.append(f"the script left processes running; they were stopped: {named}")
    _finish_watching(manifest, background, run_dir, reporter)
    manifest.markers = scanner.seen
    manifest.aoe_codes = codes.seen
    if not manifest.result_files and any(marker.kind != "tuning_on" for marker in scanner.seen):
        looked = " and ".join(str(directory) for directory in watcher.directories)
        manifest.warnings.append(
            f"AOE printed that it finished tuning, but no aoe_result_*.json appeared in {looked}; a script that sets its "
            "own work path (TF work_path, ASCEND_WORK_PATH) writes them elsewhere: point --work-dir there"
        )
        reporter.notice(f"warning: {manifest.warnings[-1]}")
    for problem in outcome.problems + [p for p in watcher.problems if p not in shown]:
        reporter.notice(f"warning: {problem}")
    return outcome


def _finish_watching(manifest: RunManifest, background: BackgroundWatcher, run_dir: Path, reporter: RunReporter) -> None:
    watcher = background.watcher
    try:
        background.finish()
    except Exception as error:  # noqa: BLE001 (the outcome matters more than the counts)
        watcher.problems.append(f"reading the result files at the end failed: {type(error).__name__}: {error}")
    if watcher.files:
        reporter.progress(watcher.progress)
    manifest.progress = watcher.progress
    for watched in watcher.files:  # still unreadable once the script is done: no longer a file being written
        if watched.error is not None and not any(problem.startswith(f"{watched.path}: ") for problem in watcher.problems):
            watcher.problems.append(f"{watched.path}: {watched.error}; its reports are not counted")
    recorded = []
    for watched in watcher.files:
        try:
            size = watched.path.stat().st_size if watched.path.is_file() else None
            if size is not None and size > MAX_JSON_BYTES:  # never copied nor hashed: that alone could take hours
                watcher.problems.append(
                    f"{watched.path}: not kept in the run record: {size / 2**30:,.1f} GiB, more than a result file may have"
                )
            elif size is not None:
                recorded.append(_record_result(watched, run_dir))
        except OSError as error:
            watcher.problems.append(f"{watched.path}: not kept in the run record: {error.strerror or error}")
    manifest.result_files = recorded
    manifest.warnings += watcher.problems


def _record_result(watched: WatchedFile, run_dir: Path) -> RecordedResult:
    source = watched.path
    if source.is_relative_to(run_dir):
        recorded = source
    else:  # a --work-dir outside the record: keep a copy, so the record stands alone
        recorded = run_dir / RESULTS_COPY / source.name
        recorded.parent.mkdir(exist_ok=True)
        copy_keeping_holes(source, recorded)  # a sparse result file stays sparse in the record
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


def _record_end(manifest: RunManifest, outcome: Outcome) -> None:
    manifest.ended_at = datetime.now(timezone.utc)
    code = outcome.returncode
    manifest.script_exit_code = code if code >= 0 else None
    manifest.script_signal = signal.Signals(-code).name if code < 0 else None
    manifest.stopped_by = outcome.stopped_by
    manifest.leftover_processes = [leftover.describe() for leftover in outcome.leftovers]
    manifest.warnings += outcome.problems
    if outcome.stopped_by == "timeout":
        manifest.status, manifest.exit_code = RunStatus.TIMED_OUT, ExitCode.TIMEOUT.value
    elif outcome.stopped_by is not None:
        manifest.status, manifest.exit_code = RunStatus.INTERRUPTED, ExitCode.INTERRUPTED.value
    elif code == 0:
        manifest.status, manifest.exit_code = RunStatus.SUCCEEDED, 0
    else:
        manifest.status, manifest.exit_code = RunStatus.FAILED, code if code > 0 else 128 - code


def _record_bank(manifest: RunManifest, store: RunStore) -> None:
    """The bank after the run, and what changed: only files whose size, mtime or inode changed are read again, and
    their contents kept in the blob store (the state a `bank publish` of this run takes)."""
    try:
        before = store.blobs.expand(manifest.bank_before)
        after = take_inventory(Path(manifest.bank), store.blobs, previous=before)
        manifest.bank_after = store.blobs.save_inventory(after)
        manifest.bank_changes = changes_between(before, after)
    except (AoeRunnerError, OSError) as error:
        manifest.warnings.append(f"the bank after the run could not be listed: {getattr(error, 'message', error)}")
