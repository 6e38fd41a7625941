"""The run history's storage: what a second tune on an unchanged bank adds, how long its snapshot takes,
and `runs prune` of 1,000 runs. Run alone with `python bench/history_bench.py` (prints its section), or from
bench/run.py.

Bank: 50,000 files, 200 MB in all (4,000 bytes each), made once per run of the benchmark. The snapshot step is
timed in this process, interleaved round by round against its baseline, the same inventory read in full (every
file read and hashed, as before the blob store, and as `--rehash` does), with wall and CPU time.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from aoe_runner.runs.bank import take_inventory  # noqa: E402
from aoe_runner.runs.blobs import BlobStore  # noqa: E402

SIMULATOR = ROOT / "tests" / "simulator" / "train.py"
BANK_FILES = 50_000
FILE_BYTES = 4_000
PRUNE_RUNS = 1_000


@dataclass
class HistoryFigures:
    bank_bytes: int
    first_added: int  # bytes the first tune added to the home
    second_added: int  # bytes the second tune, on the unchanged bank, added
    snapshot: list[tuple[float, float]]  # (wall, cpu) of the unchanged-bank snapshot step, per round
    full: list[tuple[float, float]]  # (wall, cpu) of the same inventory read in full, per round
    manifest_bytes: int
    prune_s: float
    prune_removed: int
    rm_rf_s: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]


def measure(rounds: int = 3) -> HistoryFigures:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="aoe-history-bench-") as scratch_name:
        scratch = Path(scratch_name)
        bank = _make_bank(scratch / "bank")
        env = {**os.environ, "AOE_RUNNER_HOME": str(scratch / "home"), "AOE_RUNNER_LOCK_DIR": str(scratch / "locks")}
        tune = [sys.executable, "-m", "aoe_runner", "tune", str(SIMULATOR), "--mode", "op", "--force", "--bank", str(bank)]
        time.sleep(2.5)  # the bank's files become older than the racily-clean window of the first inventory
        first_added = _added(scratch / "home", lambda: _run([*tune, "--", "exit", "0"], env))
        second_added = _added(scratch / "home", lambda: _run([*tune, "--", "exit", "0"], env))
        manifest_bytes = max(path.stat().st_size for path in (scratch / "home" / "runs").glob("*/manifest.json"))
        store = BlobStore(scratch / "home")
        snapshot, full = [], []
        for _ in range(rounds):  # interleaved: the step as tune takes it, then the baseline
            snapshot.append(_timed(lambda: take_inventory(bank, store, store.last_inventory(bank))))
            full.append(_timed(lambda: take_inventory(bank)))
        rm_rf_s = _rm_rf(scratch / "home")
        prune_s, removed = _prune(scratch / "home", env)
    return HistoryFigures(
        BANK_FILES * FILE_BYTES, first_added, second_added, snapshot, full, manifest_bytes, prune_s, removed, rm_rf_s,
        load_before, os.getloadavg(),
    )  # fmt: skip


def _make_bank(bank: Path) -> Path:
    for index in range(BANK_FILES):
        directory = bank / "Ascend910B3" / ("cube" if index % 2 else "unified_bank") / f"{index % 100:02d}"
        if index < 200:
            directory.mkdir(parents=True, exist_ok=True)
        (directory / f"op_{index}.bin").write_bytes(index.to_bytes(4, "little") * (FILE_BYTES // 4))
    return bank


def _run(command: list[str], env: dict[str, str]) -> None:
    subprocess.run(command, env=env, check=True, capture_output=True)


def _added(home: Path, action) -> int:  # type: ignore[no-untyped-def]
    before = _size(home)
    action()
    return _size(home) - before


def _size(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file()) if directory.exists() else 0


def _timed(action) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    cpu, wall = time.process_time(), time.perf_counter()
    action()
    return time.perf_counter() - wall, time.process_time() - cpu


def _prune(home: Path, env: dict[str, str]) -> tuple[float, int]:
    """Clone the last real run record into 1,000 runs, then time `runs prune --keep 0 --yes` removing them all."""
    source = max((home / "runs").iterdir(), key=lambda path: path.name)
    manifest = json.loads((source / "manifest.json").read_text())
    first = datetime(2025, 1, 1, tzinfo=timezone.utc)
    for number in range(PRUNE_RUNS):
        started = first + timedelta(minutes=number)
        run_id = f"{started:%Y%m%d-%H%M%S}-{number:04x}"
        (home / "runs" / run_id).mkdir()
        shutil.copy(source / "log.txt", home / "runs" / run_id / "log.txt")
        manifest["id"], manifest["started_at"] = run_id, started.isoformat()
        (home / "runs" / run_id / "manifest.json").write_text(json.dumps(manifest))
    (home / "runs.db").unlink()  # the index is rebuilt from the manifests by the first command
    _run([sys.executable, "-m", "aoe_runner", "runs", "list"], env)
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "runs", "prune", "--older-than", "1d", "--yes"],
        env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    removed = int(result.stdout.strip().splitlines()[-1].split()[1])
    return elapsed, removed


def _rm_rf(home: Path) -> float:
    """Baseline: `rm -rf` of 1,000 copies of the same run directory, the plain way to free that space."""
    source = next(path for path in (home / "runs").iterdir() if path.is_dir())
    targets = home / "rm-baseline"
    for number in range(PRUNE_RUNS):
        shutil.copytree(source, targets / f"run-{number}")
    start = time.perf_counter()
    subprocess.run(["rm", "-rf", str(targets)], check=True)
    return time.perf_counter() - start


def render(f: HistoryFigures) -> str:
    snap_wall = statistics.median(wall for wall, _ in f.snapshot)
    full_wall = statistics.median(wall for wall, _ in f.full)
    snap_cpu = statistics.median(cpu for _, cpu in f.snapshot)
    full_cpu = statistics.median(cpu for _, cpu in f.full)
    spread = f"{min(w for w, _ in f.snapshot):.2f}-{max(w for w, _ in f.snapshot):.2f} s"
    full_spread = f"{min(w for w, _ in f.full):.2f}-{max(w for w, _ in f.full):.2f} s"
    percent = 100 * f.second_added / f.bank_bytes
    return f"""## The run history's storage

Measured by `python bench/history_bench.py` (also part of `python bench/run.py`). Bank: {BANK_FILES:,} files,
{f.bank_bytes / 1e6:.0f} MB. Load average before {_load(f.load_before)}, after {_load(f.load_after)} (2 CPUs).

| | figure | target |
|---|---|---|
| first `tune` on the bank adds to the home | {f.first_added / 1e6:.1f} MB (the bank, stored once) | |
| second `tune`, bank unchanged, adds | {f.second_added / 1e6:.2f} MB, {percent:.2f}% of the bank | ≤ 5% |
| largest manifest | {f.manifest_bytes / 1e3:.1f} kB | |
| snapshot step, bank unchanged (median of {len(f.snapshot)}, spread {spread}) | {_wall_cpu(snap_wall, snap_cpu)} | ≤ 2 s |
| baseline: the same inventory reading every file (spread {full_spread}) | {_wall_cpu(full_wall, full_cpu)} | |
| ratio, baseline / snapshot step | {full_wall / snap_wall:.1f}x | |
| `runs prune` removing {f.prune_removed:,} runs | {f.prune_s:.2f} s | ≤ 5 s |
| baseline: `rm -rf` of {PRUNE_RUNS:,} copies of one run directory | {f.rm_rf_s:.2f} s | |

The snapshot step lists the bank and compares each file's size, mtime and inode with the bank's last inventory;
it reads none of them. The baseline rounds run interleaved with it, in the same process. `runs prune` includes
its start-up, the index update, the journal and a collect of the blob store; it deletes the run directories on 16
threads, because an `rmdir` on this virtual disk can wait milliseconds for its journal when the disk is busy
(`rm -rf` of 1,000 such directories took 3.3 s in one earlier run, {f.rm_rf_s:.2f} s in the run above).
"""


def _wall_cpu(wall: float, cpu: float) -> str:
    return f"{wall:.2f} s wall, {cpu:.2f} s CPU"


def _load(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.2f}" for value in load)


if __name__ == "__main__":
    print(render(measure()))
