"""A watchdog that outlives a killed aoe-runner and ends the run's processes.

PDEATHSIG ends the script when aoe-runner dies, even by SIGKILL, but not what the script started. Before the
script starts, the supervisor starts this small process (`python -S -c`, in a session of its own, nothing of
aoe-runner imported), which holds the read end of a pipe whose only writer is aoe-runner. The supervisor writes
the script's pid once it runs, and `done` when its run is over, before closing the pipe. A pipe that ends without
`done` means aoe-runner died: the watchdog then finds the run's processes (those in the script's session or process
group, those holding the run's device lock open, as everything the script started inherits it, and the groups it
saw among aoe-runner's children while it lived), and kills those groups round after round until three rounds find
nothing; a later run, in a group of its own, is never touched. While aoe-runner lives, the watchdog looks at its
children five times a second: aoe-runner is the run's subreaper, so whatever the script left behind becomes its
child, and a process that keeps forking (each generation alive for less than a millisecond) is seen there under
the process group it keeps. What it cannot see: a process that left the script's session, closed the lock's
descriptor and was never aoe-runner's child.
"""

from __future__ import annotations

import os
import subprocess
import sys

_CODE = r"""
import os, select, signal, sys, time
pipe, session, locks = int(sys.argv[1]), None, set(sys.argv[2:])
runner, me = os.getppid(), os.getpid()
words, seen_groups = [], set()

def children_groups():
    # the process groups of aoe-runner's children other than this one (the kernel's list: a fleeting one too)
    found = set()
    try:
        tasks = os.listdir(f"/proc/{runner}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            pids = open(f"/proc/{runner}/task/{task}/children").read().split()
        except OSError:
            continue
        for pid in pids:
            if int(pid) == me:
                continue
            try:
                found.add(int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[2]))
            except (OSError, IndexError, ValueError):
                continue
    return found

while True:
    try:
        ready = select.select([pipe], [], [], 0.2)[0]
    except InterruptedError:
        continue
    if not ready:
        if words and b"done" not in words:
            seen_groups |= children_groups()
        continue
    try:
        chunk = os.read(pipe, 4096)
    except InterruptedError:
        continue
    if not chunk:
        break
    words += chunk.split()
if b"done" in words or not words:
    sys.exit(0)
session = int(words[0])
own_group = os.getpgid(0)
seen_groups.discard(own_group)

def processes():
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                yield int(entry), int(fields[2]), int(fields[3])

def holds_lock(pid):
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") in locks for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False

groups = {session} | seen_groups
quiet, deadline = 0, time.monotonic() + 60
while quiet < 3 and time.monotonic() < deadline:
    found = False
    for pid, group, sid in processes():
        if group not in groups and group != own_group and locks and holds_lock(pid):
            groups.add(group)  # looked for every round: a fleeting holder is caught by one of them
        if group in groups or sid == session:
            found = True
            groups.add(group)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
    quiet = 0 if found else quiet + 1
    time.sleep(0.02)
"""


class Watchdog:
    """Started before the script; `watch(pid)` once it runs; `stand_down()` when the run is over."""

    def __init__(self, lock_fds: tuple[int, ...]) -> None:
        locks = [path for path in (_path_of(fd) for fd in lock_fds) if path is not None]
        read_end, self._write_end = os.pipe()  # the write end is not inherited: only aoe-runner holds it
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-S", "-c", _CODE, str(read_end), *locks],
                pass_fds=(read_end,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # no signal to aoe-runner's group or the script's reaches it
            )
        finally:
            os.close(read_end)

    def watch(self, script_pid: int) -> None:
        os.write(self._write_end, f"{script_pid}\n".encode())

    def stand_down(self) -> None:
        try:
            os.write(self._write_end, b"done\n")
        finally:
            os.close(self._write_end)
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _path_of(fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
