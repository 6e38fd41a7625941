"""Start a training script in its own process group and supervise it until nothing of it is left.

One thread, one select loop: the script's stdout and stderr are relayed as they arrive (to our own
stdout/stderr and to the log), signals reach the loop through a wakeup pipe, the script's exit
through a pidfd, and a tick callback runs about once a second. SIGINT/SIGTERM/SIGHUP are forwarded
to the whole group; after the grace period, or at a second signal, the group gets SIGKILL. The
timeout does the same. When the script exits, whatever it left running in its group is stopped too.
"""

from __future__ import annotations

import ctypes
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from aoe_runner.errors import InputError

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
READ_SIZE = 1 << 18
PIPE_DRAIN_S = 2.0  # after the group is killed, how long to wait for pipes a runaway process still holds
_PR_SET_PDEATHSIG = 1


@dataclass
class Outcome:
    pid: int
    returncode: int  # as Popen reports it: negative when a signal ended the script
    stopped_by: str | None = None  # SIGINT, SIGTERM, SIGHUP or timeout, when aoe-runner stopped it
    relay_errors: list[str] = field(default_factory=list)


@dataclass
class Streams:
    """Where the script's output goes: our own stdout/stderr (None: not relayed) and the log file."""

    out_fd: int | None
    err_fd: int | None
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
        tick_s: float = 1.0,
    ) -> None:
        self.command = list(command)
        self.env = dict(env)
        self.cwd = cwd
        self.streams = streams
        self.timeout_s = timeout_s
        self.grace_s = grace_s
        self.on_output = on_output
        self.on_tick = on_tick
        self.tick_s = tick_s
        self._pending_signals: list[int] = []
        self._relay_errors: list[str] = []
        self._failed_fds: set[int] = set()  # a closed terminal or a full disk: stop writing there, keep the rest

    def run(self, on_start: Callable[[int], None] = lambda pid: None) -> Outcome:
        """Run the script to its end; raises InputError when it cannot be started."""
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        previous_handlers = {sig: signal.signal(sig, self._on_signal) for sig in FORWARDED_SIGNALS}
        previous_wakeup = signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        try:
            process = self._start()
            on_start(process.pid)
            return self._loop(process, wake_read)
        finally:
            signal.set_wakeup_fd(previous_wakeup)
            for sig, handler in previous_handlers.items():
                signal.signal(sig, handler)
            os.close(wake_read)
            os.close(wake_write)

    def _on_signal(self, signum: int, frame: object) -> None:
        self._pending_signals.append(signum)

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
                preexec_fn=_die_with_parent(),
            )
        except OSError as error:
            raise InputError(self.command[0], f"cannot start: {error.strerror or error}") from None

    def _loop(self, process: subprocess.Popen[bytes], wake_read: int) -> Outcome:
        assert process.stdout is not None and process.stderr is not None
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ, self.streams.out_fd)
        selector.register(process.stderr, selectors.EVENT_READ, self.streams.err_fd)
        selector.register(wake_read, selectors.EVENT_READ, "signal")
        pidfd = _pidfd_open(process.pid)
        if pidfd is not None:
            selector.register(pidfd, selectors.EVENT_READ, "exit")
        pipes = {process.stdout, process.stderr}
        start = time.monotonic()
        stopper = _Stopper(process.pid, self.grace_s, start + self.timeout_s if self.timeout_s else None)
        drain_until: float | None = None
        next_tick = start + self.tick_s
        try:
            while pipes or process.returncode is None:
                wait = max(0.0, min(m for m in (next_tick, drain_until, *stopper.moments()) if m is not None) - time.monotonic())
                if pidfd is None and process.returncode is None:
                    wait = min(wait, 0.2)
                for key, _ in selector.select(wait):
                    if key.data == "signal":
                        _drain(wake_read)
                    elif key.data == "exit":
                        selector.unregister(key.fd)
                    elif not self._relay(key.fileobj, key.data):  # type: ignore[arg-type]
                        selector.unregister(key.fileobj)
                        pipes.discard(key.fileobj)  # type: ignore[arg-type]
                now = time.monotonic()
                for signum in self._take_signals():
                    stopper.on_signal(signum, now)
                if process.returncode is None and process.poll() is not None:
                    stopper.on_script_exit(now)
                stopper.on_time(now, running=process.returncode is None)
                if process.returncode is not None and stopper.kill_at is None and pipes and drain_until is None:
                    drain_until = now + PIPE_DRAIN_S
                if drain_until is not None and now >= drain_until:
                    break  # a process outside the group still holds the pipes: stop reading them
                if now >= next_tick:
                    self.on_tick()
                    next_tick = now + self.tick_s
        finally:
            selector.close()
            if pidfd is not None:
                os.close(pidfd)
            for pipe in (process.stdout, process.stderr):
                pipe.close()
            if process.returncode is None:  # only an exception from a callback gets here
                _signal_group(process.pid, signal.SIGKILL)
                process.wait()
        return Outcome(process.pid, process.returncode, stopper.stopped_by, self._relay_errors)

    def _relay(self, pipe: object, target_fd: int | None) -> bool:
        """Copy what the pipe has to the terminal and the log; False at end of file."""
        data = os.read(pipe.fileno(), READ_SIZE)  # type: ignore[attr-defined]
        if not data:
            return False
        if target_fd is not None:
            self.streams.before_relay()
            self._write(target_fd, data, "terminal")
        self._write(self.streams.log_fd, data, "log")
        self.on_output(data)
        return True

    def _write(self, fd: int, data: bytes, what: str) -> bool:
        if fd in self._failed_fds:
            return False
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError as error:
            self._failed_fds.add(fd)
            self._relay_errors.append(f"stopped writing to the {what}: {error.strerror or error}")
            return False
        return True

    def _take_signals(self) -> list[int]:
        taken, self._pending_signals[:] = list(self._pending_signals), []
        return taken


@dataclass
class _Stopper:
    """When and how to stop the script's process group: a signal or SIGTERM first, SIGKILL after the grace period."""

    group: int
    grace_s: float
    deadline: float | None  # the --timeout
    stopped_by: str | None = None
    kill_at: float | None = None

    def moments(self) -> tuple[float | None, float | None]:
        return self.deadline, self.kill_at

    def on_signal(self, signum: int, now: float) -> None:
        if self.stopped_by is None:
            self.stopped_by = signal.Signals(signum).name
            self._stop(signum, now)
        else:  # a second signal: no more waiting
            self.kill_at = now

    def on_script_exit(self, now: float) -> None:
        self.deadline = None
        if not _group_alive(self.group):
            self.kill_at = None
        elif self.kill_at is None:  # the script left something running in its group
            self._stop(signal.SIGTERM, now)

    def on_time(self, now: float, running: bool) -> None:
        if self.deadline is not None and now >= self.deadline:
            self.deadline = None
            if running and self.stopped_by is None:
                self.stopped_by = "timeout"
                self._stop(signal.SIGTERM, now)
        if self.kill_at is not None and now >= self.kill_at:
            _signal_group(self.group, signal.SIGKILL)
            self.kill_at = None

    def _stop(self, signum: int, now: float) -> None:
        _signal_group(self.group, signum)
        self.kill_at = now + self.grace_s


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _signal_group(group: int, signum: int) -> None:
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        pass


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


def _die_with_parent() -> Callable[[], None] | None:
    """In the child: ask the kernel to SIGKILL it when aoe-runner dies, so a killed supervisor leaves no orphan."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def set_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(1)

    return set_death_signal
