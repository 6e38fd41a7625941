"""A regular file never stops reading: the relay waits for the disk instead of dropping the script's output when its
queue is full (issue 42, finding 13: `tune ... 2> file` lost about 3,500 lines of a flood). A pipe nobody reads
still drops, so the supervisor never blocks."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from aoe_runner.tune.relay import TerminalWriter
from tests.tune.runner import Home, tune_command

pytestmark = pytest.mark.slow  # a 32 MB flood through a real tune

LINE = b"step 000001: loss 0.123456 [a line of a flood]\n"


def test_a_full_queue_waits_for_a_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "stderr.txt"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o644)
    writer = TerminalWriter(fd, "stderr", limit=len(LINE) * 4)  # a queue of four lines against 100,000 written at once
    assert all(writer.write(LINE) for _ in range(100_000))
    writer.close(wait_s=30)
    os.close(fd)
    assert writer.problem() is None and target.read_bytes() == LINE * 100_000


def test_a_pipe_nobody_reads_still_drops(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    writer = TerminalWriter(write_end, "stdout", limit=len(LINE) * 4)
    accepted = sum(writer.write(LINE) for _ in range(100_000))
    writer.close(wait_s=0.1)
    os.close(read_end)
    os.close(write_end)
    assert accepted < 100_000 and "was not being read" in (writer.problem() or "")


def test_tune_into_a_file_keeps_every_line_of_a_flood(tmp_path: Path) -> None:
    home = Home(tmp_path)
    size = 32 << 20
    with open(tmp_path / "out.txt", "wb") as out:
        command = tune_command("flood", str(size))
        done = subprocess.run(command, env=home.env, cwd=home.root, stdout=out, stderr=subprocess.PIPE, timeout=300)
    assert done.returncode == 0 and b"was not being read" not in done.stderr, done.stderr[-500:]
    relayed = (tmp_path / "out.txt").read_bytes()
    flood_lines = [line for line in relayed.splitlines() if line.startswith(b"step 000001")]
    assert len(flood_lines) == -(-size // 90)  # every line the script wrote (90 bytes each, the last one whole)
