"""The exit-code contract, driven through a real `python -m aoe_runner` process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aoe_runner.crashlog import run_guarded
from aoe_runner.errors import ExitCode
from aoe_runner.terminal import Terminal
from tests.conftest import DATA, ROOT, SAMPLES


def aoe_runner(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aoe_runner", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["report", str(SAMPLES)], ExitCode.OK),
        (["report", "--diff", str(SAMPLES / "training_opat"), str(SAMPLES / "retune"), "--fail-on-regression"], ExitCode.FINDING),
        (["report", "--format", "yaml", str(SAMPLES)], ExitCode.USAGE),
        (["report", str(DATA / "bad")], ExitCode.BAD_INPUT),
        (["validate", str(DATA / "odd_records")], ExitCode.FINDING),
        (["--help"], ExitCode.OK),
    ],
)
def test_contract(argv: list[str], code: int) -> None:
    result = aoe_runner(*argv)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr


def test_an_internal_error_exits_3_and_writes_a_crash_log(tmp_path: Path) -> None:
    messages: list[str] = []

    class Recorder(Terminal):
        def error(self, message: str) -> None:
            messages.append(message)

    def buggy() -> int:
        raise ZeroDivisionError("division by zero")

    assert run_guarded(buggy, ["report", "x"], Recorder()) == ExitCode.INTERNAL
    (message,) = messages
    assert message.startswith("internal error: ZeroDivisionError: division by zero (crash log: ")
    log = Path(message.split("crash log: ")[1].split(";")[0])
    text = log.read_text()
    assert "aoe-runner 0.1.0" in text and "pydantic " in text and "argv ['report', 'x']" in text
    assert "ZeroDivisionError" in text and "Traceback" in text


def test_ctrl_c_inside_the_boundary_is_130() -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    assert run_guarded(interrupted, [], Terminal()) == ExitCode.INTERRUPTED


def test_a_crash_in_a_real_process_writes_its_log_under_aoe_runner_home(tmp_path: Path) -> None:
    # Every input problem is handled, so the subprocess gets a bug injected through a sitecustomize hook.
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import aoe_runner.reporting as r\n"
        "def broken(*a, **k):\n    raise RuntimeError('injected bug')\n"
        "r.summarize_paths = broken\n"
    )
    home = tmp_path / "home"
    result = aoe_runner("report", str(SAMPLES), env={"PYTHONPATH": f"{hook}{os.pathsep}{ROOT}", "AOE_RUNNER_HOME": str(home)})
    assert result.returncode == ExitCode.INTERNAL
    assert "internal error: RuntimeError: injected bug" in result.stderr
    (log,) = (home / "crash-logs").iterdir()
    assert "injected bug" in log.read_text()
