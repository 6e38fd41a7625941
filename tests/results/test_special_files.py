"""A FIFO, a device or a directory named like a result file is one exit-4 line, never a hang (report and validate)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES


@pytest.mark.parametrize("command", ["report", "validate"])
def test_a_fifo_named_on_the_command_line_is_refused_without_blocking(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "aoe_result_opat_20260101000000000_1.json"
    os.mkfifo(fifo)
    good = next(SAMPLES.joinpath("training_opat").glob("aoe_result_*.json"))

    result = subprocess.run(
        [sys.executable, "-m", "aoe_runner", command, str(fifo), str(good)], capture_output=True, text=True, timeout=30
    )

    assert result.returncode == 4
    assert f"error: {fifo}: not a regular file (a FIFO, device or socket is never read)" in result.stderr
    assert str(good) in result.stdout or "reports" in result.stdout  # the other file is still read


def test_a_device_is_refused_too(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "report", "/dev/zero"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 4 and "not a regular file" in result.stderr
