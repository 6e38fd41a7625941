"""Run a short helper command (npu-smi, git) with a hard time limit, whatever the command does."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

COLLECT_S = 0.1  # how long a command's output is read for once it is past its time limit, or killed


@dataclass(frozen=True)
class Completed:
    exit_code: int | None  # None when the command timed out or could not start
    stdout: str
    error: str | None = None  # why there is no exit code

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def run_bounded(command: Sequence[str], timeout_s: float, cwd: str | None = None) -> Completed:
    """Run without a shell in its own session; on timeout (or Ctrl-C) kill the whole group, so no grandchild keeps a
    pipe open."""
    with Started(command, timeout_s, cwd) as started:
        return started.finish()


class Started:
    """A bounded helper command started now and collected later, so that it runs while aoe-runner does other work.

    The time limit counts from the start. Use it as a context manager (or call cancel): a command never collected
    is killed with its group, never left behind.
    """

    def __init__(self, command: Sequence[str], timeout_s: float, cwd: str | None = None) -> None:
        self._name, self._timeout_s = command[0], timeout_s
        self._deadline = time.monotonic() + timeout_s
        self._completed: Completed | None = None
        try:
            self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
                list(command),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as error:
            self._process = None
            self._completed = Completed(None, "", f"cannot run {self._name}: {error.strerror or error}")

    def finish(self) -> Completed:
        """Wait for the command, up to what is left of its time limit; the same answer on every call."""
        if self._completed is not None:
            return self._completed
        assert self._process is not None
        try:  # past the deadline, a command that has already ended still gets its output read
            stdout, _ = self._process.communicate(timeout=max(COLLECT_S, self._deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.cancel()
            self._completed = Completed(None, "", f"{self._name} did not finish within {self._timeout_s:g} s")
            return self._completed
        self._completed = Completed(self._process.returncode, stdout.decode(errors="replace"))
        return self._completed

    def cancel(self) -> None:
        """Kill the command's group if it still runs, and reap it."""
        if self._process is not None and self._process.returncode is None:
            _kill_group(self._process.pid)
            try:
                self._process.communicate(timeout=COLLECT_S)
            except subprocess.TimeoutExpired:  # something outside the group (setsid) still holds the pipe
                if self._process.stdout is not None:
                    self._process.stdout.close()
                self._process.wait()

    def __enter__(self) -> Started:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cancel()


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
