"""Colour on a terminal only, and as --color, NO_COLOR and FORCE_COLOR say; never in a file, a pipe or JSON."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from aoe_runner.common import colour
from tests.conftest import DATA, ROOT

SERVER = DATA / "facts" / "server-192c-8npu.json"
PREFLIGHT = ("preflight", "--facts", str(SERVER), "--mode", "subgraph")
RED_FAIL = "\x1b[1;31mFAIL\x1b[0m"


def _run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS")}
    return subprocess.run(
        [sys.executable, "-m", "aoe_runner", *argv], capture_output=True, text=True, env={**environment, **(env or {})}, cwd=ROOT
    )


def test_a_pipe_gets_no_colour_unless_asked() -> None:
    assert "\x1b[" not in _run(*PREFLIGHT).stdout
    assert RED_FAIL in _run("--color", "always", *PREFLIGHT).stdout
    assert RED_FAIL in _run(*PREFLIGHT, env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[" not in _run(*PREFLIGHT, env={"FORCE_COLOR": "0"}).stdout


def test_no_color_beats_force_color_and_the_flag_beats_both() -> None:
    assert "\x1b[" not in _run(*PREFLIGHT, env={"NO_COLOR": "1", "FORCE_COLOR": "1"}).stdout
    assert RED_FAIL in _run("--color", "always", *PREFLIGHT, env={"NO_COLOR": "1"}).stdout
    assert "\x1b[" not in _run("--color", "never", *PREFLIGHT, env={"FORCE_COLOR": "1"}).stdout


def test_a_terminal_gets_colour_by_default() -> None:
    """A real pseudo-terminal as stdout: auto colours it."""
    leader, follower = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    done = subprocess.run(
        [sys.executable, "-m", "aoe_runner", *PREFLIGHT],
        stdout=follower,
        stderr=subprocess.PIPE,
        env={**environment, "TERM": "xterm"},
        cwd=ROOT,
        timeout=60,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert done.returncode == 1 and RED_FAIL.encode() in shown


def test_files_and_json_never_get_colour(tmp_path: Path) -> None:
    written = tmp_path / "preflight.txt"
    assert _run("--color", "always", *PREFLIGHT, "-o", str(written)).returncode == 1
    assert "\x1b[" not in written.read_text() and "FAIL" in written.read_text()
    assert "\x1b[" not in _run("--color", "always", *PREFLIGHT, "--json").stdout
    assert "\x1b[" not in _run("--color", "always", *PREFLIGHT, "-f", "markdown").stdout


def test_a_diff_colours_its_verdicts_and_never_a_name() -> None:
    diff = _run("--color", "always", "report", "--diff", "sample_results/training_opat", "sample_results/retune").stdout
    assert "\x1b[31mregressed\x1b[0m" in diff and "\x1b[32mimproved\x1b[0m" in diff


def test_a_bad_choice_is_a_usage_error() -> None:
    done = _run("--color", "sometimes", *PREFLIGHT)
    assert (done.returncode, done.stderr) == (
        2,
        "error: --color: 'sometimes' is not one of auto, always, never (see 'aoe-runner --help')\n",
    )


@pytest.mark.parametrize(
    ("env", "tty", "wanted"),
    [({}, False, False), ({}, True, True), ({"TERM": "dumb"}, True, False), ({"NO_COLOR": ""}, True, True)],
)
def test_auto(env: dict[str, str], tty: bool, wanted: bool) -> None:
    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return tty

    assert colour.wanted(Stream(), {"TERM": "xterm", **env}) is wanted
