"""ScriptTree.sweep kills a run's processes round after round until none is left, a process that keeps forking
(under setsid, ignoring SIGTERM) included; run_children reads the kernel's list of our children, which a fast forker
cannot slip out of between two generations (issue 42, finding 4).

This sandbox ends a process that forks without pause by itself within about a second, so the forker here starts a
generation every few milliseconds: long enough to live through the test, and still a new pid at every round."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from aoe_runner.tune.tree import ScriptTree, set_subreaper

FORKER = """
import os, signal, sys, time
os.setsid()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(os.getpid(), flush=True)
sys.stdout.close()
while True:
    time.sleep(0.003)
    if os.fork() != 0:
        os._exit(0)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _session_members(pids: set[int]) -> list[int]:
    """Living processes in the sessions those pids led (the forker's generations keep its session)."""
    sessions = set(pids)
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) in sessions and fields[0] != "Z":
                found.append(int(entry))
    return found


def test_a_forking_setsid_process_is_swept() -> None:
    assert set_subreaper(True)
    try:
        known = ScriptTree.our_children()
        script = subprocess.Popen(
            [
                sys.executable,
                "-S",
                "-c",
                "import subprocess, sys; subprocess.Popen([sys.executable, '-S', '-c', sys.argv[1]])",
                FORKER,
            ]
        )
        script.wait(timeout=30)  # the script is gone: what it started is handed to us, generation after generation
        tree = ScriptTree(script.pid, known)
        time.sleep(0.3)
        seen = tree.run_children()
        assert seen, "the forker, as our child, in the kernel's list (a scan of /proc may find it gone already)"
        left = tree.sweep(5.0)
        assert left == set() and tree.run_children() == set()
        time.sleep(0.1)
        assert not any(_alive(pid) for pid in seen) and _session_members(seen) == []
    finally:
        set_subreaper(False)
