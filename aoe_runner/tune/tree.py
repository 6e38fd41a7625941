"""Every process a script starts stays accountable to the run, including daemons that leave its group.

aoe-runner makes itself the children's subreaper (PR_SET_CHILD_SUBREAPER), so an orphan anywhere below
the script, even one that called setsid, is reparented to aoe-runner rather than to init. The run's
processes are then the script, its descendants, and our own children other than those we had before
the script started. What the script started when aoe-runner itself is killed by SIGKILL is the watchdog's
(tune/watchdog.py); until it is gone, the device lock's descriptor, inherited by the whole tree, keeps the device
marked busy.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

import psutil

from aoe_runner.common.lifeline import linux_prctl

_PR_SET_CHILD_SUBREAPER = 36
_QUIET_ROUNDS = 3  # rounds of a sweep that find no process of the run before it is done
_ROUND_S = 0.002


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

    def run_children(self) -> set[int]:
        """Our children of the run, other than the script, as the kernel lists them at once, after reaping those
        that had exited: a process that keeps forking is always among them (each orphan is handed to us, the
        subreaper), where a scan of /proc, or a look at each listed pid in turn, finds every one gone by then.
        Empty when nothing of the run is left (at the moment of the second listing)."""
        for pid in self._listed_children():
            try:
                os.waitpid(pid, os.WNOHANG)  # a zombie is reaped; a living child stays
            except ChildProcessError:
                pass
        return self._listed_children()

    def _listed_children(self) -> set[int]:
        listed = _kernel_children()
        if listed is None:  # no /proc/self/task/*/children: psutil's scan, which may miss a fast forker
            listed = {child.pid for child in _children(psutil.Process())}
        return listed - self.known_children - {self.script_pid}

    def sweep(self, within_s: float) -> set[int]:
        """SIGKILL the run's processes round after round until a few rounds find none: each process killed hands its
        children to us, so the next round finds them, and the process group of each is killed whole, which a
        process that keeps forking (under setsid, ignoring SIGTERM) cannot outrun: its generations keep its group.
        The pids still alive when within_s is up."""
        deadline = time.monotonic() + within_s
        quiet_rounds = 0
        groups = {self.script_pid}  # and every group a process of the run was seen in: a forker's stays the same
        while True:
            alive = self.run_children()
            groups |= {group for group in map(_group_of, alive) if group is not None and group != os.getpgrp()}
            for group in groups:
                try:
                    os.killpg(group, signal.SIGKILL)  # every member at once, however fast it forks
                except (ProcessLookupError, PermissionError):
                    pass
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            quiet_rounds = 0 if alive else quiet_rounds + 1
            if quiet_rounds >= _QUIET_ROUNDS:
                return set()
            if time.monotonic() >= deadline:
                return alive
            time.sleep(_ROUND_S)

    def others(self) -> list[psutil.Process]:
        """The run's living processes other than the script itself."""
        roots = [child for child in _children(psutil.Process()) if child.pid not in self.known_children]
        for pid in (_kernel_children() or set()) - self.known_children - {child.pid for child in roots}:
            try:  # one the scan missed: a child born while it ran
                roots.append(psutil.Process(pid))
            except psutil.Error:
                pass
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

    def remember_unnamed(self, pids: set[int]) -> None:
        """Children the kernel listed that a scan could not describe: gone before it looked, as a process that keeps
        forking is (its next generation is the one to stop)."""
        for pid in pids:
            if pid not in self.seen:
                try:
                    self.seen[pid] = _describe(psutil.Process(pid))
                except psutil.Error:
                    self.seen[pid] = Leftover(pid, "?", "a process gone before it could be named, as one that keeps forking")

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


def _group_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[2])
    except (OSError, ValueError, IndexError):
        return None


def _kernel_children() -> set[int] | None:
    """This process's children as the kernel lists them, per thread (an orphan may be handed to any of our threads);
    None where /proc does not list them (CONFIG_PROC_CHILDREN)."""
    found: set[int] = set()
    try:
        for thread in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{thread}/children", encoding="ascii") as listing:
                found.update(int(pid) for pid in listing.read().split())
    except (OSError, ValueError):
        return None
    return found


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
