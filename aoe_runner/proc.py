"""Run a short helper command (npu-smi, git) with a hard time limit, whatever the command does."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Completed:
    exit_code: int | None  # None when the command timed out or could not start
    stdout: str
    error: str | None = None  # why there is no exit code

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def run_bounded(command: Sequence[str], timeout_s: float, cwd: str | None = None) -> Completed:
    """Run without a shell in its own session; on timeout kill the whole group, so no grandchild keeps a pipe open."""
    try:
        process = subprocess.Popen(
            list(command),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as error:
        return Completed(None, "", f"cannot run {command[0]}: {error.strerror or error}")
    try:
        stdout, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        process.communicate()
        return Completed(None, "", f"{command[0]} did not finish within {timeout_s:g} s")
    return Completed(process.returncode, stdout.decode(errors="replace"))


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
