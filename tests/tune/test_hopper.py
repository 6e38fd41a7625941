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
