"""SIGTERM and SIGHUP stop `tune` as Ctrl-C does, exit 130 with one line, from the moment aoe-runner's entry runs,
while its modules still load and before the script starts; not only once the supervisor watches (issue 42,
finding 9)."""

from __future__ import annotations

import signal
import time

import pytest

from tests.tune.runner import Home, start_tune

pytestmark = pytest.mark.slow  # a real tune per moment and signal

TERM_BIT = 1 << (signal.SIGTERM - 1)


def _catches_sigterm(pid: int) -> bool:
    """The process has a handler for SIGTERM (SigCgt in /proc): aoe-runner's entry has run."""
    try:
        status = open(f"/proc/{pid}/status").read()
    except OSError:
        return False
    caught = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught, 16) & TERM_BIT)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("after", [0.0, 0.05, 0.15, 0.3, 0.6])
def test_a_termination_at_any_moment_of_start_up_is_exit_130(tmp_path, signum: int, after: float) -> None:  # type: ignore[no-untyped-def]
    home = Home(tmp_path)
    process = start_tune(home, "sleep", "30")
    deadline = time.monotonic() + 30
    while not _catches_sigterm(process.pid):
        assert process.poll() is None and time.monotonic() < deadline, "aoe-runner never installed its handlers"
        time.sleep(0.001)
    time.sleep(after)
    process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (after, err)
    assert "Traceback" not in err and "interrupted" in err, err
