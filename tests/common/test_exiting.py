"""`report` as the program leaves once its result is out, without the interpreter's teardown; exit handlers, the
output and the exit code are kept. Real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from aoe_runner.cli import main as cli
from aoe_runner.common import exiting
from tests.conftest import ROOT  # noqa: E402

SAMPLES = ROOT / "sample_results"

DRIVER = textwrap.dedent(
    """
    import atexit, os, sys
    from aoe_runner.__main__ import main

    hard_exit = os._exit

    def left_early(code):
        os.write(2, b"left early\\n")
        hard_exit(code)

    os._exit = left_early
    atexit.register(lambda: sys.stderr.write("exit handler ran\\n"))
    sys.argv = ["aoe-runner", *sys.argv[1:]]
    raise SystemExit(main())
    """
)


def run_driver(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AOE_RUNNER_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", DRIVER, *arguments], capture_output=True, text=True, env=env, timeout=120, check=False
    )


@pytest.mark.parametrize(("extra", "code"), [([], 0), (["/no/such/file"], 4)], ids=["all good", "a bad input"])
def test_report_leaves_early_after_its_exit_handlers_and_keeps_its_output_and_code(
    tmp_path: Path, extra: list[str], code: int
) -> None:
    done = run_driver(tmp_path, "report", str(SAMPLES), *extra, "--format", "json")
    assert done.returncode == code
    assert len(json.loads(done.stdout)["operators"]) == 16
    assert done.stderr.endswith("exit handler ran\nleft early\n")


def test_other_commands_exit_through_the_teardown(tmp_path: Path) -> None:
    done = run_driver(tmp_path, "validate", str(SAMPLES / "training_opat"))
    assert done.returncode == 0
    assert done.stderr.endswith("exit handler ran\n") and "left early" not in done.stderr


def test_in_process_or_beside_another_thread_leave_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli.main(["report", str(SAMPLES), "--format", "json"]) == 0  # in-process: report returns
    monkeypatch.setattr(exiting, "_as_program", True)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        exiting.leave(0)  # would end pytest here if it did not see the other thread
    finally:
        stop.set()
        other.join()
