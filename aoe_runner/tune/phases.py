"""A run's supervised processes, one after another: the script alone, or a PyTorch graph dump then the offline CLI.

Each phase runs under its own Supervisor with what is left of the run's --timeout; a phase starts only when the one
before it exited 0, no signal arrived meanwhile and the flow's check of it passed (Flow.after_phase): a
phase that does not run is recorded with the reason. The log and the terminal get one line where a phase starts.
The run's outcome is the last phase's that ran, with the problems and leftovers of all of them; a phase whose
program cannot be started (gone, or not executable) ends the run as exit 127 would, a shell's "cannot run".
"""

from __future__ import annotations

import os
import shlex
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Protocol

from aoe_runner.errors import InputError
from aoe_runner.runs.flows import PhaseRecord
from aoe_runner.runs.manifest import RunManifest
from aoe_runner.tune.supervisor import Outcome, Signals, Streams, Supervisor

CANNOT_START = 127  # as a shell says of a command it cannot run


class Flow(Protocol):
    """What a framework's way of tuning adds to a run: a check between phases, and its part of the record."""

    def after_phase(self, phase: PhaseRecord) -> str | None:
        """Why the next phase must not start, or None (asked only of a phase that exited 0 unstopped)."""

    def finish(self, manifest: RunManifest) -> None:
        """Complete the record once every phase has ended (the run's status and exit code are set by then)."""


@dataclass
class Hooks:
    on_output: Callable[[bytes], None]
    on_tick: Callable[[], None]
    on_stopping: Callable[[str], None]
    on_start: Callable[[int], None]


def planned_phases(manifest: RunManifest) -> list[PhaseRecord]:
    """The manifest's phases; a record that names none ran its command as the one phase."""
    if not manifest.phases:
        manifest.phases = [PhaseRecord(name="script", command=list(manifest.command))]
    return manifest.phases


def run_phases(
    manifest: RunManifest,
    env: Mapping[str, str],
    streams: Streams,
    grace_s: float,
    hooks: Hooks,
    inherit_fds: Sequence[int],
    signals: Signals,
    flow: Flow | None,
) -> Outcome:
    phases = planned_phases(manifest)
    started = time.monotonic()
    combined: Outcome | None = None
    for number, phase in enumerate(phases, start=1):
        if combined is not None:
            reason = _reason_to_stop(combined, phases[number - 2], signals, manifest.timeout_s, started)
            if reason is not None:
                phase.skipped = reason
                continue
            _say(streams, hooks, f"phase {number} of {len(phases)} ({phase.name}): {shlex.join(phase.command)}")
        remaining = None if manifest.timeout_s is None else max(manifest.timeout_s - (time.monotonic() - started), 0.001)
        phase.started_at = datetime.now(timezone.utc)
        supervisor = Supervisor(
            phase.command,
            env,
            phase.working_directory or manifest.working_directory,
            streams,
            timeout_s=remaining,
            grace_s=grace_s,
            on_output=hooks.on_output,
            on_tick=hooks.on_tick,
            on_stopping=hooks.on_stopping,
            inherit_fds=inherit_fds,
        )
        try:
            outcome = supervisor.run(signals, on_start=hooks.on_start)
        except InputError as error:  # its program is gone or not executable: the run still gets its end recorded
            phase.started_at, phase.skipped = None, f"could not be started: {error.reason}"
            outcome = Outcome(pid=0, returncode=CANNOT_START, problems=[f"{error.where}: {error.reason}"])
        phase.ended_at = datetime.now(timezone.utc) if phase.started_at is not None else None
        if phase.started_at is not None:
            phase.exit_code = outcome.returncode if outcome.returncode >= 0 else None
            phase.signal = signal.Signals(-outcome.returncode).name if outcome.returncode < 0 else None
        if combined is not None:
            outcome.problems[:0] = combined.problems
            outcome.leftovers[:0] = combined.leftovers
        combined = outcome
        if flow is not None and outcome.returncode == 0 and outcome.stopped_by is None:
            reason = flow.after_phase(phase)
            if reason is not None:
                combined.problems.append(reason)
                for later in phases[number:]:
                    later.skipped = reason
                break
    assert combined is not None
    return combined


def _reason_to_stop(
    outcome: Outcome, previous: PhaseRecord, signals: Signals, timeout_s: float | None, started: float
) -> str | None:
    if outcome.stopped_by is not None:
        return f"the run was stopped ({outcome.stopped_by}) in the {previous.name} phase"
    if outcome.returncode != 0:
        ended = f"exited {outcome.returncode}" if outcome.returncode > 0 else f"was killed by {previous.signal}"
        return f"the {previous.name} phase {ended}"
    arrived = signals.take()
    if arrived:
        outcome.stopped_by = signal.Signals(arrived[0]).name
        return f"{outcome.stopped_by} arrived after the {previous.name} phase"
    if timeout_s is not None and time.monotonic() - started >= timeout_s:
        outcome.stopped_by = "timeout"
        return f"--timeout was reached in the {previous.name} phase"
    return None


def _say(streams: Streams, hooks: Hooks, line: str) -> None:
    """A phase's start, in the log and for the person watching."""
    try:
        os.write(streams.log_fd, f"\n{line}\n".encode(errors="surrogateescape"))  # a path's bytes as they are
    except OSError:
        pass  # the supervisor notes a log it cannot write
    hooks.on_stopping(line)
