"""A huge or zero-filled result file is refused from its size or its first bytes, never read whole, and the good
files beside it are still reported (issue 42, finding 1): report, report --diff and validate."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

pytestmark = pytest.mark.slow  # sparse files of up to 1 TB, read by real commands

GOOD = SAMPLES / "training_opat" / "aoe_result_opat_20260310142233517_41237.json"


def _sparse(path: Path, size: int, start: bytes = b"") -> Path:
    with open(path, "wb") as handle:
        handle.write(start)
        handle.truncate(size)
    return path


@pytest.fixture
def results(tmp_path: Path) -> Path:
    top = tmp_path / "results"
    top.mkdir()
    shutil.copy(GOOD, top / GOOD.name)
    return top


def _run(tmp_path: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "AOE_RUNNER_HOME": str(tmp_path / "home")}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "aoe_runner", *argv], capture_output=True, text=True, env=env, timeout=120)
    return done, time.monotonic() - started


@pytest.mark.parametrize(
    ("size", "start", "why"),
    [
        (2**40, b"", "1,048,576 MiB, more than the 1,024 MiB a result file may have: not read"),  # 1 TB of zero bytes
        (3 * 2**30, b'{"report_1": [', "3,072 MiB, more than the 1,024 MiB a result file may have: not read"),
        (50 * 2**20, b"", "not an AOE result file: it is not JSON (expected '{' or '[')"),
        (50 * 2**20, b" " * 5000 + b"\0", "not an AOE result file: it is not JSON (expected '{' or '[')"),
        (50 * 2**20, b"\n" * (2**20 + 1), "not an AOE result file: it starts with 1 MiB of whitespace"),
        (1025 * 2**20, b"{", "1,025 MiB, more than the 1,024 MiB a result file may have: not read"),
    ],
    ids=[
        "1 TB of zeros",
        "3 GiB that starts as JSON",
        "50 MiB of zeros",
        "zeros after 5,000 spaces",
        "whitespace",
        "1 GiB and 1 MiB",
    ],
)
@pytest.mark.parametrize("command", ["report", "validate"])
def test_refused_unread_beside_a_good_file(
    tmp_path: Path, results: Path, size: int, start: bytes, why: str, command: str
) -> None:
    huge = _sparse(results / "aoe_result_opat_20260101000000000_1.json", size, start)
    done, took = _run(tmp_path, command, str(results), *(["--format", "json"] if command == "report" else []))
    assert f"{huge}: {why}" in done.stderr, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert took < 30  # a whole read of the 3 GiB file alone took 28 s and 6 GiB of memory
    if command == "report":
        assert json.loads(done.stdout)["totals"]["files"] == 1  # the good file, summarised
    else:
        assert GOOD.name in done.stdout


def test_diff_with_a_huge_file_on_one_side(tmp_path: Path, results: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(GOOD, other / GOOD.name)
    huge = _sparse(other / "aoe_result_opat_20260101000000000_1.json", 2**40)
    done, _ = _run(tmp_path, "report", "--diff", str(results), str(other))
    assert "internal error" not in done.stderr and f"{huge}: 1,048,576 MiB, more than the 1,024 MiB" in done.stderr, done.stderr


@pytest.mark.parametrize("command", ["report", "validate"])
def test_a_file_of_tiny_objects_is_refused_unread(tmp_path: Path, results: Path, command: str) -> None:
    """An object or list every few bytes would take 25 times the file's size as Python objects (finding 8)."""
    dense = results / "aoe_result_opat_20260101000000000_1.json"
    dense.write_bytes(b'{"report_1": [' + b"[]," * 2**20 + b"[]]}")
    done, _ = _run(tmp_path, command, str(results))
    assert (
        f"{dense}: not an AOE result file: 1,048,579 objects and lists in 3,145,746 bytes, one every 3.0 bytes" in done.stderr
    ), done.stderr
    assert "internal error" not in done.stderr
