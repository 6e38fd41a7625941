"""`aoe-runner bank pull` of a 50,000-file bank with 1% changed since the version in place, against a plain copy.

A regular install (bench/installs.py). A bank of FILES files of SIZE bytes is tuned once (a script that writes
nothing: the run records the bank) and published; then a run changes 1% of the files and is published again. Each
round puts version 1 in place (not timed), then times the pull of version 2 over it, and a plain `cp -a` of the same
bank into a new directory. Wall and CPU time, and the blocks each wrote (ru_oublock of the process, 512-byte units,
as the kernel accounts the pages it dirtied). Interleaved rounds, median and spread, the load before and after.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from installs import regular_install
from report_bench import ROOT

WRITER = ROOT / "tests" / "releases" / "bank_writer.py"
FILES = 50_000
SIZE = 2048
CHANGED = FILES // 100


@dataclass
class Measured:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    written: list[int] = field(default_factory=list)


@dataclass
class ReleaseFigures:
    pull: Measured = field(default_factory=Measured)
    copy: Measured = field(default_factory=Measured)
    publish_s: float = 0.0
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)


def _timed(command: list[str], env: dict[str, str], into: Measured) -> None:
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(
            f"failed ({process.returncode}): {' '.join(command)}: {process.stderr.read().decode() if process.stderr else ''}"
        )
    into.wall.append(time.perf_counter() - started)
    into.cpu.append(usage.ru_utime + usage.ru_stime)
    into.written.append(usage.ru_oublock * 512)


def _run(command: list[str], env: dict[str, str], cwd: Path) -> None:
    subprocess.run(command, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure(rounds: int) -> ReleaseFigures:
    figures = ReleaseFigures(load_before=os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="aoe-bench-release-") as scratch_name:
        scratch = Path(scratch_name)
        runner = regular_install(scratch / "venv").runner
        env = {**os.environ, "AOE_RUNNER_HOME": str(scratch / "home"), "AOE_RUNNER_LOCK_DIR": str(scratch / "locks")}
        env["HOME"] = str(scratch / "user")
        bank = scratch / "bank"
        for number in range(FILES):
            path = bank / "Ascend910B3" / "cube" / f"{number // 1000:02d}" / f"op_{number}.bin"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(os.urandom(SIZE))
        tune = [*runner, "-q", "tune", str(WRITER), "--mode", "op", "--force", "--framework", "tf", "--bank", str(bank), "--"]
        _run(tune, env, scratch)
        started = time.perf_counter()
        _run([*runner, "bank", "publish", "latest", "--name", "bench", "--unverified"], env, scratch)
        figures.publish_s = time.perf_counter() - started
        changes = [f"Ascend910B3/cube/{n // 1000:02d}/op_{n}.bin=changed {n}" for n in range(0, FILES, FILES // CHANGED)]
        _run([*tune, *changes], env, scratch)
        _run([*runner, "bank", "publish", "latest", "--name", "bench", "--unverified"], env, scratch)
        target = scratch / "train" / "bank"
        target.parent.mkdir()
        for number in range(rounds):
            print(f"  round {number + 1}/{rounds}", flush=True)
            _run([*runner, "bank", "pull", "bench@1", "--to", str(target)], env, scratch)
            _timed([*runner, "bank", "pull", "bench@2", "--to", str(target)], env, figures.pull)
            copy = scratch / f"copy-{number}"
            _timed(["cp", "-a", str(bank), str(copy)], env, figures.copy)
            shutil.rmtree(copy)
    figures.load_after = os.getloadavg()
    return figures


def _cell(values: list[float], unit: str = "s") -> str:
    return f"{statistics.median(values):.2f} {unit} ({min(values):.2f}-{max(values):.2f})"


def _mib(values: list[int]) -> str:
    return f"{statistics.median(values) / 2**20:.0f} MiB"


def render(f: ReleaseFigures) -> str:
    load = " / ".join(f"{value:.2f}" for value in f.load_before), " / ".join(f"{value:.2f}" for value in f.load_after)
    ratio = statistics.median(f.pull.wall) / statistics.median(f.copy.wall)
    return "\n".join(
        [
            "## `aoe-runner bank pull`",
            "",
            f"Load average before {load[0]}, after {load[1]}; {len(f.pull.wall)} interleaved rounds, median (min-max).",
            f"A bank of {FILES:,} files of {SIZE} bytes; version 2 differs from version 1 in {CHANGED} files (1%). Each",
            "round puts version 1 in place, then times the pull of version 2 over it, and `cp -a` of the bank (regular install).",
            "",
            "| what | wall | CPU | written |",
            "|---|---|---|---|",
            f"| `bank pull bench@2` over bench@1 | {_cell(f.pull.wall)} | {_cell(f.pull.cpu)} | {_mib(f.pull.written)} |",
            f"| `cp -a` of the same bank | {_cell(f.copy.wall)} | {_cell(f.copy.cpu)} | {_mib(f.copy.written)} |",
            "",
            f"Pull / copy, wall: {ratio:.2f}. A pull writes every file of the version into a directory of its own (each",
            "checked against its sha256), whatever changed: the version in place stays whole for `bank rollback`, and a",
            "file shared with it (a hard link) would change both when a tune writes into the pulled bank. `bank publish`",
            f"of the 50,000-file bank (its contents already stored by the tune): {f.publish_s:.1f} s.",
        ]
    )
