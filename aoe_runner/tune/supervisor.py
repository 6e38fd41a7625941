"""Start a training script in its own process group and supervise it until nothing of it is left.

One select loop serves the script's stdout and stderr (relayed to the terminal writers and to the log; read on
a schedule rather than polled, see `read_unpolled_again`), signals (counted through the wakeup pipe of
`signals.CountedSignals`, which the caller holds), the script's exit
(through a pidfd), the timeout and a tick callback about once a second. Nothing in the loop blocks: terminal
output goes through `relay.TerminalWriter`, which drops rather than waits, and a callback that fails is
recorded as a problem, never allowed to stop the script. SIGINT/SIGTERM/SIGHUP and the timeout stop the whole
run (its process group and every other process of it, see `tree`); after the grace period, or at a second
signal, it gets SIGKILL. When the script exits, whatever it left running is stopped the same way, and named.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from aoe_runner.common.lifeline import die_with_this_process
from aoe_runner.common.quantities import format_duration
from aoe_runner.errors import InputError
from aoe_runner.tune.pipes import (
    BATCH_WAIT_S,
    gather_below,
    read_unpolled_again,
    take_available,
    widen,
)
from aoe_runner.tune.relay import TerminalWriter
from aoe_runner.tune.tree import Leftover, ScriptTree, set_subreaper
from aoe_runner.tune.watchdog import Watchdog

PIPE_DRAIN_S = 2.0  # after everything is killed, how long to wait for pipes something unkillable still holds
SETTLE_S = 0.2  # after the script exits, how long its processes get to exit with it before they count as left over
LEFTOVER_POLL_S = 0.1
SWEEP_S = 1.0  # at SIGKILL, how long to go on killing what the run keeps starting (ScriptTree.sweep)


class Signals(Protocol):
    """Where the loop learns of signals (signals.CountedSignals): a descriptor readable when some have arrived."""

    @property
    def fd(self) -> int: ...
    def take(self) -> list[int]: ...


@dataclass
class Outcome:
    pid: int
    returncode: int  # as Popen reports it: negative when a signal ended the script
    stopped_by: str | None = None  # SIGINT, SIGTERM, SIGHUP or timeout, when aoe-runner stopped it
    problems: list[str] = field(default_factory=list)  # what went wrong around the script, never with it
    leftovers: list[Leftover] = field(default_factory=list)  # processes that outlived the script and were stopped
    late_signal: str | None = None  # a signal that came after the script exited: it only hurried the clean-up


@dataclass
class Streams:
    """Where the script's output goes: terminal writers (None: not relayed) and the log file."""

    out: TerminalWriter | None
    err: TerminalWriter | None
    log_fd: int
    before_relay: Callable[[], None] = lambda: None  # e.g. clear a status line first


class Supervisor:
    def __init__(
        self,
        command: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        streams: Streams,
        timeout_s: float | None = None,
        grace_s: float = 10.0,
        on_output: Callable[[bytes], None] = lambda data: None,
        on_tick: Callable[[], None] = lambda: None,
        on_stopping: Callable[[str], None] = lambda message: None,
        tick_s: float = 1.0,
        inherit_fds: Sequence[int] = (),
    ) -> None:
        self.command = list(command)
        self.env = dict(env)
        self.cwd = cwd
        self.streams = streams
        self.timeout_s = timeout_s
        self.grace_s = grace_s
        self.on_output = on_output
        self.on_tick = on_tick
        self.on_stopping = on_stopping  # told what stopping the run does, as it does it: one line each
        self.tick_s = tick_s
        self.inherit_fds = tuple(inherit_fds)  # e.g. the device lock: held while any process of the run lives
        self._problems: list[str] = []
        self._log_failed = False

    def run(self, signals: Signals, on_start: Callable[[int], None] = lambda pid: None) -> Outcome:
        """Run the script to its end; raises InputError when it cannot be started.

        Signals that arrived before (while the run was being prepared) stop the script as soon as it has started;
        those that arrive after the loop is left are the caller's to read (record._late).
        """
        subreaper = set_subreaper(True)
        watchdog = self._watchdog()  # before our children are counted: it is not the run's
        try:
            known_children = ScriptTree.our_children()
            process = self._start()
            if watchdog is not None:
                self._guarded("telling the watchdog", watchdog.watch, process.pid)
            tree = ScriptTree(process.pid, known_children)
            self._guarded("recording the start", on_start, process.pid)
            return self._loop(process, signals, tree)
        finally:
            if watchdog is not None:
                self._guarded("ending the watchdog", watchdog.stand_down)
            if subreaper:
                set_subreaper(False)

    def _watchdog(self) -> Watchdog | None:
        """The process that ends the run's processes should aoe-runner be killed (watchdog.py); None, and a note,
        where it cannot be started."""
        try:
            return Watchdog(self.inherit_fds)
        except OSError as error:
            self._note(f"no watchdog for a killed aoe-runner: {error.strerror or error}")
            return None

    def _start(self) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                self.command,
                env=self.env,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group, away from our terminal's Ctrl-C
                preexec_fn=die_with_this_process(),
                pass_fds=self.inherit_fds,
            )
        except OSError as error:
            raise InputError(self.command[0], f"cannot start: {error.strerror or error}") from None

    def _loop(self, process: subprocess.Popen[bytes], signals: Signals, tree: ScriptTree) -> Outcome:
        assert process.stdout is not None and process.stderr is not None
        open_pipes: dict[object, TerminalWriter | None] = {process.stdout: self.streams.out, process.stderr: self.streams.err}
        gather = min(gather_below(widen(pipe.fileno())) for pipe in (process.stdout, process.stderr))
        unpolled = gather > 0  # read on a schedule, never polled: see read_unpolled_again
        selector = selectors.DefaultSelector()
        for pipe, writer in open_pipes.items():
            os.set_blocking(pipe.fileno(), False)  # type: ignore[attr-defined]
            if not unpolled:
                selector.register(pipe, selectors.EVENT_READ, writer)  # type: ignore[arg-type]
        selector.register(signals.fd, selectors.EVENT_READ, "signal")
        pidfd = _pidfd_open(process.pid)
        if pidfd is not None:
            selector.register(pidfd, selectors.EVENT_READ, "exit")
        start = time.monotonic()
        stopper = _Stopper(tree, self.grace_s, start + self.timeout_s if self.timeout_s else None)
        drain_until: float | None = None
        next_tick = start + self.tick_s
        look_again = BATCH_WAIT_S  # unpolled pipes: when to read them next
        try:
            while open_pipes or process.returncode is None or stopper.settling:
                wait = max(0.0, min(m for m in (next_tick, drain_until, *stopper.moments()) if m is not None) - time.monotonic())
                if pidfd is None and process.returncode is None:
                    wait = min(wait, 0.2)
                if unpolled and open_pipes:
                    wait = min(wait, look_again)
                ready = []
                arrived: list[int] = []
                for key, _ in selector.select(wait):
                    if key.data == "signal":
                        arrived = signals.take()
                    elif key.data == "exit":
                        selector.unregister(key.fd)
                    else:
                        ready.append(key.fileobj)
                relayed = 0
                for pipe in list(open_pipes) if unpolled else ready:
                    count = self._relay(pipe, open_pipes[pipe])
                    if count == 0:  # end of file, or it cannot be read
                        del open_pipes[pipe]
                        if not unpolled:
                            selector.unregister(pipe)  # type: ignore[arg-type]
                    elif count is not None:
                        relayed += count
                if unpolled:
                    look_again = read_unpolled_again(relayed, gather, look_again)
                now = time.monotonic()
                for signum in arrived:
                    stopper.on_signal(signum, now)
                if process.returncode is None and process.poll() is not None:
                    stopper.on_script_exit(now)
                stopper.on_time(now, running=process.returncode is None)
                if process.returncode is not None and not stopper.settling and open_pipes and drain_until is None:
                    drain_until = now + PIPE_DRAIN_S
                if drain_until is not None and now >= drain_until:
                    break  # something that cannot be killed still holds the pipes: stop reading them
                for message in stopper.take_said():
                    self._guarded("saying how the run is stopped", self.on_stopping, message)
                if now >= next_tick:
                    self._guarded("watching the run", self.on_tick)
                    next_tick = now + self.tick_s
        finally:
            selector.close()
            if pidfd is not None:
                os.close(pidfd)
            for pipe in (process.stdout, process.stderr):
                pipe.close()
            if process.returncode is None:  # only a bug in the loop itself gets here
                tree.signal_all(signal.SIGKILL)
                process.wait()
        self._problems += stopper.problems
        return Outcome(
            process.pid, process.returncode, stopper.stopped_by, self._problems, list(tree.seen.values()), stopper.late_signal
        )

    def _relay(self, pipe: object, writer: TerminalWriter | None) -> int | None:
        """Copy what the pipe has to the terminal writer and the log: the number of bytes, 0 at end of file (or when
        the pipe cannot be read), None when the pipe has nothing yet (both pipes are non-blocking)."""
        try:
            data = take_available(pipe.fileno())  # type: ignore[attr-defined]
        except BlockingIOError:
            return None
        except OSError as error:
            self._note(f"cannot read the script's output: {error.strerror or error}")
            return 0
        if not data:
            return 0
        if writer is not None:
            self._guarded("clearing the status line", self.streams.before_relay)
            writer.write(data)
        self._write_log(data)
        self._guarded("scanning the output", self.on_output, data)
        return len(data)

    def _write_log(self, data: bytes) -> None:
        if self._log_failed:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.streams.log_fd, view) :]
        except OSError as error:
            self._log_failed = True
            self._note(f"stopped writing to the log: {error.strerror or error}")

    def _guarded(self, what: str, callback: Callable[..., None], *arguments: object) -> None:
        """Run one of our own callbacks; a failure is recorded and the script goes on."""
        try:
            callback(*arguments)
        except Exception as error:  # noqa: BLE001 (nothing of ours may stop the script)
            self._note(f"{what} failed: {type(error).__name__}: {error}")

    def _note(self, problem: str) -> None:
        if problem not in self._problems:
            self._problems.append(problem)


@dataclass
class _Stopper:
    """When and how to stop the run's processes: a signal or SIGTERM first, SIGKILL after the grace period."""

    tree: ScriptTree
    grace_s: float
    deadline: float | None  # the --timeout
    stopped_by: str | None = None
    kill_at: float | None = None
    check_at: float | None = None  # after the script exited: when to look for what it left running
    settle_until: float | None = None  # until then, what is left gets time to exit on its own before it is stopped
    give_up_at: float | None = None  # after SIGKILL: stop waiting for processes that cannot be killed
    late_signal: str | None = None
    problems: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)  # what stopping does, for the person watching

    @property
    def settling(self) -> bool:
        """The script has exited and processes it left may still be running."""
        return self.check_at is not None

    def moments(self) -> tuple[float | None, float | None, float | None]:
        return self.deadline, self.kill_at, self.check_at

    def take_said(self) -> list[str]:
        said, self.said = self.said, []
        return said

    def on_signal(self, signum: int, now: float) -> None:
        name = signal.Signals(signum).name
        if self.check_at is not None and self.stopped_by is None:  # the script has exited on its own: its outcome stands
            if self.late_signal is None:
                self.said.append(f"{name}: the script has exited; killing what it left running now")
            self.late_signal = self.late_signal or name
            self.kill_at = now
        elif self.stopped_by is None:
            self.stopped_by = name
            self._stop(signum, now)
            self.said.append(f"{name}: stopping the script; {self._kill_when()} (--grace), or at once at another signal")
        else:  # a second signal (or one after the timeout): no more waiting
            if self.kill_at is not None and self.kill_at > now:
                self.said.append(f"{name}: killing the script now (SIGKILL)")
            self.kill_at = now

    def on_script_exit(self, now: float) -> None:
        self.deadline = None
        self.check_at = now  # look at once: most scripts leave nothing, and their run ends without waiting
        self.settle_until = now + SETTLE_S

    def on_time(self, now: float, running: bool) -> None:
        if self.deadline is not None and now >= self.deadline:
            self.deadline = None
            if running and self.stopped_by is None:
                self.stopped_by = "timeout"
                self._stop(signal.SIGTERM, now)
                self.said.append(
                    f"--timeout reached: stopping the script (SIGTERM); {self._kill_when()} (--grace), or at once at a signal"
                )
        if self.kill_at is not None and now >= self.kill_at:
            self.tree.signal_all(signal.SIGKILL)
            self.tree.sweep(SWEEP_S)  # what keeps forking, or was started meanwhile, too
            self.kill_at = None
            self.give_up_at = now + PIPE_DRAIN_S
        if self.check_at is not None and now >= self.check_at:
            self._check_leftovers(now)

    def _check_leftovers(self, now: float) -> None:
        self.tree.reap()
        others = self.tree.others()
        children = self.tree.run_children()  # the kernel's list: a process that keeps forking is always in it
        if not others and not _group_alive(self.tree.script_pid) and not children:
            self.check_at = None
            return
        until = self.settle_until
        if until is not None and now < until and self.give_up_at is None:
            self.check_at = min(now + LEFTOVER_POLL_S, until)  # exiting with the script is not being left
            return
        self.tree.remember(others)
        self.tree.remember_unnamed(children)
        if self.give_up_at is not None and now >= self.give_up_at:
            self.problems.append(
                "still running after SIGKILL, left behind: "
                + ", ".join(self.tree.seen[pid].describe() for pid in sorted({p.pid for p in others} | children))
            )
            self.check_at = None
            return
        if self.kill_at is None and self.give_up_at is None:
            self._stop(signal.SIGTERM, now)
        self.check_at = now + LEFTOVER_POLL_S

    def _stop(self, signum: int, now: float) -> None:
        self.tree.signal_all(signum)
        self.kill_at = now + self.grace_s

    def _kill_when(self) -> str:
        return f"whatever still runs gets SIGKILL in {format_duration(self.grace_s)}"


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pidfd_open(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:  # kernels before 5.3
        return None
