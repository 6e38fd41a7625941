"""Ctrl-C or the death of `report` stops its worker processes at once, with no orphan and no traceback.

The workers are real processes of a real `report` run (the CLI's main, forked workers); only their share of
the work is replaced by a wait, so that the signal is certain to arrive while they work.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT  # noqa: E402

pytestmark = pytest.mark.slow  # signals to a report and its forked workers

SAMPLES = ROOT / "sample_results"

DRIVER = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    from aoe_runner.report import api as reporting
    from aoe_runner.__main__ import main

    parent, workers_file, stopped = os.getpid(), Path(sys.argv[1]), sys.argv.pop() == "stopped"

    def busy_share(paths, cache):
        if os.getpid() != parent:
            with open(workers_file, "a") as pids:
                print(os.getpid(), file=pids)
            if stopped:
                os.kill(os.getpid(), signal.SIGSTOP)  # as a debugger or a frozen cgroup would hold it
        else:
            while not workers_file.exists():
                time.sleep(0.01)
            print("ready", flush=True)
        time.sleep(3600)

    reporting._merge_chunk = busy_share  # forked workers inherit it
    reporting.PARALLEL_MIN_BYTES = 0  # workers even for the small samples
    sys.argv = ["aoe-runner", "report", sys.argv[2], "--format", "json"]
    raise SystemExit(main())
    """
)


def start_report(tmp_path: Path, workers: str = "working") -> tuple[psutil.Popen, Path]:
    workers_file = tmp_path / "workers"
    env = {**os.environ, "AOE_RUNNER_HOME": str(tmp_path / "home"), "AOE_RUNNER_CACHE": "off", "PYTHONPATH": str(ROOT)}
    process = psutil.Popen(
        [sys.executable, "-c", DRIVER, str(workers_file), str(SAMPLES), workers],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n", process.stderr.read() if process.stderr else ""
    return process, workers_file


def workers_left(workers_file: Path, timeout_s: float = 10.0) -> list[int]:
    pids = [int(line) for line in workers_file.read_text().split()]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        living = [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
        if not living:
            return []
        time.sleep(0.05)
    return living


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers and the parent-death signal are Linux's")
@pytest.mark.parametrize("to_group", [False, True], ids=["ctrl-c to report alone", "ctrl-c to the process group"])
def test_ctrl_c_stops_the_workers_at_once(tmp_path: Path, to_group: bool) -> None:
    process, workers_file = start_report(tmp_path)

    (os.killpg if to_group else os.kill)(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=15)

    assert process.returncode == 130
    assert err == "error: interrupted\n"
    assert workers_left(workers_file) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_workers_die_with_a_killed_report(tmp_path: Path) -> None:
    process, workers_file = start_report(tmp_path)

    process.kill()
    process.wait(timeout=15)

    assert workers_left(workers_file) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers are Linux's")
def test_ctrl_c_stops_a_report_whose_worker_is_stopped(tmp_path: Path) -> None:
    """A stopped process does not act on SIGTERM: the workers are killed."""
    process, workers_file = start_report(tmp_path, "stopped")

    os.kill(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=15)

    assert (process.returncode, err) == (130, "error: interrupted\n")
    assert workers_left(workers_file) == []
