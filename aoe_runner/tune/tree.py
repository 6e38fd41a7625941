"""Every process a script starts stays accountable to the run, including daemons that leave its group.

aoe-runner makes itself the children's subreaper (PR_SET_CHILD_SUBREAPER), so an orphan anywhere below
the script, even one that called setsid, is reparented to aoe-runner rather than to init. The run's
processes are then the script, its descendants, and our own children other than those we had before
the script started. A child of the script that is killed with aoe-runner by SIGKILL cannot be
caught this way: the device lock's descriptor, inherited by the whole tree, keeps the device marked
busy for as long as any of them lives (see `tune.supervisor`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

from aoe_runner.common.lifeline import linux_prctl

_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class Leftover:
    pid: int
    name: str
    command: str

    def describe(self) -> str:
        return f"pid {self.pid} ({self.command or self.name})"


def set_subreaper(enabled: bool) -> bool:
    """Become (or stop being) the subreaper of our descendants; False where the kernel cannot."""
    prctl = linux_prctl()
    return prctl is not None and prctl(_PR_SET_CHILD_SUBREAPER, int(enabled), 0, 0, 0) == 0


class ScriptTree:
    """The processes of one run, found from the script's pid and our own children."""

    def __init__(self, script_pid: int, known_children: set[int]) -> None:
        self.script_pid = script_pid
        self.known_children = known_children  # ours before the script started: not the run's
        self.seen: dict[int, Leftover] = {}

    @staticmethod
    def our_children() -> set[int]:
        return {child.pid for child in psutil.Process().children()}

    def others(self) -> list[psutil.Process]:
        """The run's living processes other than the script itself."""
        roots = [child for child in _children(psutil.Process()) if child.pid not in self.known_children]
        found: dict[int, psutil.Process] = {}
        for root in roots:
            for process in (root, *_children(root, recursive=True)):
                if process.pid != self.script_pid and _living(process):
                    found[process.pid] = process
        return list(found.values())

    def remember(self, processes: list[psutil.Process]) -> None:
        for process in processes:
            if process.pid not in self.seen:
                self.seen[process.pid] = _describe(process)

    def signal_all(self, signum: int) -> None:
        """Signal the script's process group and every other process of the run."""
        try:
            os.killpg(self.script_pid, signum)
        except (ProcessLookupError, PermissionError):
            pass
        for process in self.others():
            try:
                process.send_signal(signum)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass

    def reap(self) -> None:
        """Collect the exit status of reparented orphans, so they do not linger as zombies of ours."""
        for child in _children(psutil.Process()):
            if child.pid == self.script_pid or child.pid in self.known_children:
                continue  # the script is Popen's to wait for
            try:
                os.waitpid(child.pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _children(process: psutil.Process, recursive: bool = False) -> list[psutil.Process]:
    try:
        return process.children(recursive=recursive)
    except psutil.Error:
        return []


def _living(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _describe(process: psutil.Process) -> Leftover:
    try:
        with process.oneshot():
            return Leftover(process.pid, process.name(), " ".join(process.cmdline())[:200])
    except psutil.Error:
        return Leftover(process.pid, "?", "")
