"""A process that keeps forking and exiting (a new pid every fraction of a millisecond, under setsid, ignoring
SIGTERM) does not outlive its run: it is swept with its process group, named, and the device is free for the next
run (issue 42, finding 4: it used to end with exit 0, nothing named, the device held, and the process running on).
No scan of /proc can kill such a process one pid at a time: only its group, which every generation keeps."""

from __future__ import annotations

import os
import signal

import pytest

from tests.tune.runner import Home, tune

pytestmark = pytest.mark.slow  # runs against a process that never stops forking


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("attempt", range(3))
def test_a_forking_leftover_is_swept_and_the_device_freed(tmp_path, attempt: int) -> None:  # type: ignore[no-untyped-def]
    home = Home(tmp_path)
    pid_file = tmp_path / "pids"
    try:
        code, _, err = tune(home, "hopper", "--pid-file", str(pid_file), options=("--grace", "0.3s"))
        group = int(pid_file.read_text().split()[-1])  # after the script's own pid
        manifest = home.only_manifest()
        assert manifest["leftover_processes"] and "left processes running" in err, err
        assert not _group_alive(group), "the forker outlived its run"
        code, _, err = tune(home, "progress")  # the same device: its lock was released with the last generation
        assert code == 0, err
    finally:
        for line in pid_file.read_text().split() if pid_file.exists() else ():
            for _ in range(100):  # never leave a forker running on the machine, whatever the test found
                try:
                    os.killpg(int(line), signal.SIGKILL)
                except ProcessLookupError:
                    break


@pytest.mark.parametrize("after_s", [0.7, 1.6])
def test_a_forking_leftover_dies_with_a_killed_aoe_runner(tmp_path, after_s: float) -> None:  # type: ignore[no-untyped-def]
    """SIGKILL of aoe-runner itself: the watchdog ends the forker's group too (it saw it among aoe-runner's
    children, or holding the device lock), and the device is free again."""
    import time

    from tests.tune.runner import pids_in, start_tune

    home = Home(tmp_path)
    pid_file = tmp_path / "pids"
    process = start_tune(home, "hopper", "--pid-file", str(pid_file), "--interval", "0", options=("--grace", "1s"))
    try:
        deadline = time.monotonic() + 20
        while len(pids_in(pid_file)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(after_s)
        process.kill()
        process.communicate(timeout=30)
        group = pids_in(pid_file)[-1]
        deadline = time.monotonic() + 15
        while _group_alive(group) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _group_alive(group), "the forker outlived a killed aoe-runner"
        code, _, err = tune(home, "progress")  # the device is free
        assert code == 0, err
    finally:
        for line in pid_file.read_text().split() if pid_file.exists() else ():
            for _ in range(100):
                try:
                    os.killpg(int(line), signal.SIGKILL)
                except ProcessLookupError:
                    break
