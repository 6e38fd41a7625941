"""Where outputs go (issue 12): `-o -` is stdout, a bad -o names the real cause, files follow the umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from tests.tune.runner import SIMULATOR, Home


def run_cli(*argv: str, cwd: Path, umask: int = 0o022, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aoe_runner", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.umask(umask),
    )


def test_dash_means_stdout_and_creates_no_file(tmp_path: Path) -> None:
    result = run_cli("report", str(SAMPLES / "training_opat"), "-f", "json", "-o", "-", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("{")
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize(
    ("target", "cause"),
    [
        ("", "an empty path names no file"),
        ("/proc/version", "files of /proc and /sys are the kernel's"),
        (".", "it is a directory"),
        ("/nonexistent-dir/out.json", "a new file in /nonexistent-dir could not be made"),
    ],
)
def test_a_bad_output_path_is_one_line_naming_the_real_cause(tmp_path: Path, target: str, cause: str) -> None:
    result = run_cli("report", str(SAMPLES / "training_opat"), "-f", "json", "-o", target, cwd=tmp_path)

    assert result.returncode == 4, result.stderr
    assert cause in result.stderr and result.stderr.count("error:") == 1


def test_a_fifo_as_output_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    result = run_cli("report", str(SAMPLES / "training_opat"), "-o", str(fifo), cwd=tmp_path)

    assert result.returncode == 4 and "not a regular file" in result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # left as it was


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_outputs_and_run_records_follow_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    home = Home(tmp_path)
    out = tmp_path / "summary.json"
    assert (
        run_cli("report", str(SAMPLES / "training_opat"), "-f", "json", "-o", str(out), cwd=tmp_path, umask=umask).returncode == 0
    )
    tuned = run_cli("tune", str(SIMULATOR), "--mode", "op", "--force", "--", "exit", "0", cwd=tmp_path, umask=umask, env=home.env)
    assert tuned.returncode == 0, tuned.stderr

    assert stat.S_IMODE(out.stat().st_mode) == mode
    (manifest,) = (tmp_path / "home" / "runs").glob("*/manifest.json")
    assert stat.S_IMODE(manifest.stat().st_mode) == mode
