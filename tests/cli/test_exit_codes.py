"""The exit-code contract, driven through a real `python -m aoe_runner` process."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from aoe_runner.cli.crashlog import run_guarded
from aoe_runner.common.terminal import Terminal
from aoe_runner.errors import ExitCode
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
        (["preflight", "--model-memory", "12", "--facts", "/dev/null"], ExitCode.USAGE),  # 2 wins over 4: it was 4
        (["preflight", "--mode", "bogus", "--facts", "/nonexistent"], ExitCode.USAGE),
        (["verify", "--run", ""], ExitCode.USAGE),  # it was 4, "not a run id"
    ],
)
def test_contract(argv: list[str], code: int) -> None:
    result = aoe_runner(*argv)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr


def _crash_messages() -> list[str]:
    """The error lines of a bug (ZeroDivisionError) inside the crash boundary, which must exit 3."""
    messages: list[str] = []

    class Recorder(Terminal):
        def error(self, message: str) -> None:
            messages.append(message)

    def buggy() -> int:
        raise ZeroDivisionError("division by zero")

    assert run_guarded(buggy, ["report", "x"], Recorder()) == ExitCode.INTERNAL
    return messages


def test_an_internal_error_exits_3_and_writes_a_crash_log(tmp_path: Path) -> None:
    (message,) = _crash_messages()
    assert message.startswith("internal error: ZeroDivisionError: division by zero (crash log: ")
    log = Path(message.split("crash log: ")[1].split(";")[0])
    text = log.read_text()
    assert "aoe-runner 0.1.0" in text and "pydantic " in text and "argv ['report', 'x']" in text
    assert "ZeroDivisionError" in text and "Traceback" in text


def test_an_internal_error_with_nowhere_to_write_its_log_is_still_one_line_and_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No writable home and no usable temporary directory (tempfile.gettempdir raises then): no log, no traceback."""
    (tmp_path / "home").write_text("a file where the home should be")
    monkeypatch.setenv("AOE_RUNNER_HOME", str(tmp_path / "home"))

    def no_temporary_directory() -> str:
        raise FileNotFoundError(2, "No usable temporary directory found")

    monkeypatch.setattr(tempfile, "gettempdir", no_temporary_directory)
    assert _crash_messages() == [
        "internal error: ZeroDivisionError: division by zero (no crash log: neither the home nor a temporary"
        " directory takes one; please report it)"
    ]


def test_ctrl_c_inside_the_boundary_is_130() -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    assert run_guarded(interrupted, [], Terminal()) == ExitCode.INTERRUPTED


def test_a_crash_in_a_real_process_writes_its_log_under_aoe_runner_home(tmp_path: Path) -> None:
    # Every input problem is handled, so the subprocess gets a bug injected through a sitecustomize hook.
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import aoe_runner.report.api as r\n"
        "def broken(*a, **k):\n    raise RuntimeError('injected bug')\n"
        "r.summarize_paths = broken\n"
    )
    home = tmp_path / "home"
    result = aoe_runner("report", str(SAMPLES), env={"PYTHONPATH": f"{hook}{os.pathsep}{ROOT}", "AOE_RUNNER_HOME": str(home)})
    assert result.returncode == ExitCode.INTERNAL
    assert "internal error: RuntimeError: injected bug" in result.stderr
    (log,) = (home / "crash-logs").iterdir()
    assert "injected bug" in log.read_text()


FULL = "/dev/full"  # a device whose every write fails with ENOSPC: a full disk, for real


def _writing_to(stdout: int, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """aoe-runner with its stdout on the descriptor `stdout`, its stderr captured."""
    return subprocess.run(
        [sys.executable, "-m", "aoe_runner", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )


@pytest.mark.skipif(not os.path.exists(FULL), reason="needs /dev/full")
@pytest.mark.parametrize(
    "argv",
    [["report", str(SAMPLES)], ["report", str(SAMPLES), "--format", "json"], ["runs", "list"], ["--help"], ["report", "--help"]],
)
def test_a_full_stdout_is_one_line_and_exit_4_not_a_crash(tmp_path: Path, argv: list[str]) -> None:
    home = tmp_path / "home"
    with open(FULL, "w") as full:
        result = _writing_to(full.fileno(), argv, {**os.environ, "AOE_RUNNER_HOME": str(home)})
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == ExitCode.BAD_INPUT, result.stderr
    assert errors == ["error: stdout: cannot write the result: No space left on device"]
    assert "Traceback" not in result.stderr and not (home / "crash-logs").exists()


def test_a_reader_that_stops_early_ends_the_output_quietly_with_the_commands_own_code(tmp_path: Path) -> None:
    # As `aoe-runner report ... | head -c 1` when the reader has left before the report is written.
    argv = ["report", str(SAMPLES), "--format", "json"]
    whole = aoe_runner(*argv, env={"AOE_RUNNER_HOME": str(tmp_path / "a")})
    process = subprocess.Popen(
        [sys.executable, "-m", "aoe_runner", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "AOE_RUNNER_HOME": str(tmp_path / "b")},
        restore_signals=False,  # SIGPIPE ignored, as under a Python parent: the write fails with EPIPE
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before the report is ready: its write meets a pipe with no reader
    code = process.wait(timeout=60)
    stderr = process.stderr.read().decode()
    assert code == whole.returncode == ExitCode.OK
    assert "Traceback" not in stderr and "error:" not in stderr and "Exception ignored" not in stderr


@pytest.fixture(scope="module")
def large_report(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A report whose JSON (about 1 MB) is more than a pipe holds, written in several pieces (json_format)."""
    from tests.render.test_json_batches import operators_file

    directory = tmp_path_factory.mktemp("large")
    return ["report", str(operators_file(directory, 1)), str(operators_file(directory, 2)), "--format", "json"]


@pytest.mark.parametrize("output_format", ["json", "csv", "markdown"])
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_a_pipe_that_will_not_take_the_whole_result_is_exit_4_not_a_cut_result(
    tmp_path: Path, large_report: list[str], unbuffered: bool, output_format: str
) -> None:
    """A non-blocking pipe nobody reads: unbuffered (`python -u`), stdout's raw stream writes part of a piece, then
    nothing; each piece is written whole or the write fails, never skipped. Text formats too: unbuffered, a text
    stream would pass the text to the raw stream and drop what it did not take, with exit 0."""
    import fcntl

    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETFL, fcntl.fcntl(write_end, fcntl.F_GETFL) | os.O_NONBLOCK)
    env = {**os.environ, "AOE_RUNNER_HOME": str(tmp_path / "home")}
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    try:
        result = _writing_to(write_end, [*large_report[:-1], output_format, "--top", "100000"], env)
    finally:
        os.close(write_end)
        os.close(read_end)
    assert result.returncode == ExitCode.BAD_INPUT, result.stderr
    assert result.stderr.splitlines() == ["error: stdout: cannot write the result: write could not complete without blocking"]


def test_ctrl_c_while_a_large_result_waits_on_a_full_pipe_is_heard_at_once(tmp_path: Path, large_report: list[str]) -> None:
    """Unbuffered, while the reader has stopped reading: exit 130 without the reader draining the pipe, and what came
    out is the start of the result, nothing from its middle left out."""
    import signal

    env = {**os.environ, "AOE_RUNNER_HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1"}
    whole = subprocess.run([sys.executable, "-m", "aoe_runner", *large_report], capture_output=True, cwd=ROOT, env=env)
    process = subprocess.Popen(
        [sys.executable, "-m", "aoe_runner", *large_report], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.read(1)  # the result has started: the next write fills the pipe and waits
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=20)  # the pipe is not read meanwhile: the process must not wait for that
    out = first + process.stdout.read()
    assert code == ExitCode.INTERRUPTED, process.stderr.read()
    assert len(whole.stdout) > len(out) > 0 and whole.stdout.startswith(out)


@pytest.mark.parametrize(
    ("redirect", "argv", "code", "message"),
    [
        (
            ">&-",
            ["report", str(SAMPLES), "--format", "json"],
            ExitCode.BAD_INPUT,
            "error: stdout: cannot write the result: stdout is closed",
        ),
        ("2>&-", ["report", str(DATA / "bad")], ExitCode.BAD_INPUT, None),
        ("2>&-", ["report", str(SAMPLES), "--format", "json", "-o", "{tmp}/out.json"], ExitCode.OK, None),
        (">&-", ["report", str(SAMPLES), "--format", "html", "-o", "{tmp}/out.html"], ExitCode.OK, None),
        (">&- 2>&-", ["report", str(SAMPLES), "--format", "csv", "-o", "{tmp}/out.csv"], ExitCode.OK, None),
    ],
)
def test_a_closed_stdout_or_stderr_is_not_a_crash(
    tmp_path: Path, redirect: str, argv: list[str], code: int, message: str | None
) -> None:
    """`>&-` and `2>&-` leave Python without sys.stdout or sys.stderr; a result written to a file succeeds without
    them (the exit flushed streams that were never there: exit 3, once)."""
    import shlex

    home = tmp_path / "home"
    argv = [argument.replace("{tmp}", str(tmp_path)) for argument in argv]
    command = f"exec {shlex.quote(sys.executable)} -m aoe_runner {shlex.join(argv)} {redirect}"
    result = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, cwd=ROOT, env={**os.environ, "AOE_RUNNER_HOME": str(home)}
    )
    assert result.returncode == code, result.stderr
    assert not (home / "crash-logs").exists()
    if message is not None:
        assert message in result.stderr.splitlines()
    if code == ExitCode.OK:
        assert (tmp_path / f"out.{argv[3]}").stat().st_size > 0
