"""The `tune` and run-history benchmarks, run by bench/run.py in the same run as the report benchmarks.

- log relay: the simulator writes 200 MB of log lines, through `aoe-runner tune` (to the terminal and the
  run's log) against through `tee` to a file, interleaved round by round;
- supervision cost: aoe-runner's own CPU time while the script sleeps, against the sleeping script's;
- `runs list` over 10,000 recorded runs, against a bare sqlite3 query of the same index in a fresh Python.
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

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_bench import run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SIMULATOR = ROOT / "tests" / "simulator" / "train.py"
LOG_BYTES = 200_000_000
SLEEP_S = 30
RUNS = 10_000
RELAY_ROUNDS = 7
TUNE = [sys.executable, "-m", "aoe_runner", "tune", str(SIMULATOR), "--mode", "op", "--force", "--"]


@dataclass
class Relay:
    """Interleaved rounds of the flood through aoe-runner and through tee: (wall, CPU) seconds each."""

    tune: list[tuple[float, float]]
    tee: list[tuple[float, float]]
    cat: list[tuple[float, float]]  # the script into `cat > /dev/null`: how fast it writes, with nothing kept
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]

    @property
    def ratios(self) -> list[float]:
        """Per-round wall-time ratios: each pair ran back to back, under about the same load."""
        return [tune[0] / tee[0] for tune, tee in zip(self.tune, self.tee, strict=True)]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    def row(self, name: str, runs: list[tuple[float, float]]) -> str:
        walls, cpus = [run[0] for run in runs], [run[1] for run in runs]
        return (
            f"| {name} | {statistics.median(walls):.2f} s ({min(walls):.2f}-{max(walls):.2f}) | {statistics.median(cpus):.2f} s |"
        )


@dataclass
class TuneFigures:
    relay: Relay
    fixed_s: float
    supervisor_cpu_pct: float
    script_cpu_pct: float
    sampled_s: float
    list_s: float
    list_all_s: float
    list_baseline_s: float
    reindex_s: float

    @property
    def relay_ratio(self) -> float:
        return self.relay.ratio


def measure(rounds: int) -> TuneFigures:
    with tempfile.TemporaryDirectory() as scratch:
        env = _env(Path(scratch))
        tune = [*TUNE, "flood", str(LOG_BYTES)]
        tee = ["sh", "-c", f'"{sys.executable}" "{SIMULATOR}" flood {LOG_BYTES} | tee "{scratch}/tee.log" >/dev/null']
        load_before = os.getloadavg()
        tune_runs, tee_runs, cat_runs = [], [], []
        cat = ["sh", "-c", f'"{sys.executable}" "{SIMULATOR}" flood {LOG_BYTES} | cat >/dev/null']
        for _ in range(max(rounds, RELAY_ROUNDS)):
            tune_runs.append(run(tune, env)[:2])
            tee_runs.append(run(tee, env)[:2])
            cat_runs.append(run(cat, env)[:2])
        load_after = os.getloadavg()
        fixed = statistics.median(run([*TUNE, "flood", "1"], env)[0] for _ in range(5))
        supervisor_pct, script_pct, sampled = _supervision_cost(env)
        reindex, list_s, list_all, baseline = _runs_list(Path(scratch) / "history")
    return TuneFigures(
        Relay(tune_runs, tee_runs, cat_runs, load_before, load_after),
        fixed,
        supervisor_pct,
        script_pct,
        sampled,
        list_s,
        list_all,
        baseline,
        reindex,
    )


def _env(scratch: Path) -> dict[str, str]:
    """Also for the baselines: the script writes unbuffered there too, as `tune` makes it (PYTHONUNBUFFERED=1)."""
    return {
        **os.environ,
        "AOE_RUNNER_HOME": str(scratch / "home"),
        "AOE_RUNNER_LOCK_DIR": str(scratch / "locks"),
        "PYTHONUNBUFFERED": "1",
    }


def _supervision_cost(env: dict[str, str]) -> tuple[float, float, float]:
    """CPU % of one core used by aoe-runner itself, and by the sleeping script, over the middle of its sleep."""
    command = [*TUNE, "sleep", str(SLEEP_S)]
    supervisor = psutil.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not supervisor.children():
        time.sleep(0.05)
    script = supervisor.children()[0]
    time.sleep(2)  # past start-up: preflight, bank inventory, the first ticks
    start, own, child = time.monotonic(), _cpu(supervisor), _cpu(script)
    time.sleep(SLEEP_S - 5)
    elapsed = time.monotonic() - start
    own, child = _cpu(supervisor) - own, _cpu(script) - child
    supervisor.wait()
    return 100 * own / elapsed, 100 * child / elapsed, elapsed


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system  # the process's own time, not its children's


def _runs_list(scratch: Path) -> tuple[float, float, float, float]:
    """Clone one real run record 10,000 times (with its result files, which runs list reads once to show each run's
    time saved), rebuild the index from the manifests, then time `runs list`."""
    env = _env(scratch)
    subprocess.run(
        [
            *TUNE,
            "progress",
            "--interval",
            "0",
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    home = scratch / "home"
    (source,) = (home / "runs").iterdir()
    manifest = json.loads((source / "manifest.json").read_text())
    first = datetime(2025, 1, 1, tzinfo=timezone.utc)
    for number in range(RUNS - 1):
        started = first + timedelta(minutes=number)
        run_id = f"{started:%Y%m%d-%H%M%S}-{number:04x}"
        target = home / "runs" / run_id
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("manifest.json"))  # its result files too
        manifest["id"], manifest["started_at"] = run_id, started.isoformat()
        (target / "manifest.json").write_text(json.dumps(manifest))
    (home / "runs.db").unlink()
    for suffix in ("-wal", "-shm"):
        Path(str(home / "runs.db") + suffix).unlink(missing_ok=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "aoe_runner", "runs", "list"], env=env, check=True, capture_output=True)
    reindex = time.perf_counter() - start
    runs_list = [sys.executable, "-m", "aoe_runner", "runs", "list"]
    baseline = [
        sys.executable,
        "-c",
        "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("
        "'SELECT * FROM runs ORDER BY started_at DESC LIMIT 20').fetchall())",
        str(home / "runs.db"),
    ]
    list_s = _median_run(runs_list, env)
    list_all = _median_run([*runs_list, "--all"], env)
    base = _median_run(baseline, env)
    assert len(list(home.joinpath("runs").iterdir())) == RUNS
    shutil.rmtree(home / "runs")
    return reindex, list_s, list_all, base


def _median_run(command: list[str], env: dict[str, str], rounds: int = 7) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def render(figures: TuneFigures, rounds: int) -> str:
    f = figures
    supervisor_ms = f.supervisor_cpu_pct * f.sampled_s * 10
    tick_pct = 1 / f.sampled_s  # one 10 ms tick over the sampled time, in % of one core
    return "\n".join(
        [
            "## `aoe-runner tune` and the run history",
            "",
            f"Log relay: the simulator (`tests/simulator/train.py flood`) writes {LOG_BYTES / 1e6:.0f} MB of log",
            f"lines; {len(f.relay.tune)} interleaved rounds. aoe-runner relays them to its stdout (here /dev/null)",
            "and to the run's log, and scans them for AOE's markers and error codes; the baseline pipes the same",
            "script through `tee` to a file, with the PYTHONUNBUFFERED=1 that `tune` gives the script (a write per",
            "line, as a training script's log arrives). The aoe-runner figure includes its start-up, preflight and run record",
            "(the fixed part, below). CPU time is that of the whole pipeline, the script included. Load average",
            f"{_load(f.relay.load_before)} before, {_load(f.relay.load_after)} after.",
            "",
            "| command | median wall time (min-max) | median CPU time |",
            "|---|---|---|",
            f.relay.row("`script \\| tee log`", f.relay.tee),
            f.relay.row("`aoe-runner tune script`", f.relay.tune),
            f.relay.row("floor: `script \\| cat >/dev/null`", f.relay.cat),
            "",
            f"Ratio to tee (median of the per-round ratios): {f.relay_ratio:.2f} ({min(f.relay.ratios):.2f}-"
            f"{max(f.relay.ratios):.2f}). aoe-runner's fixed part, `tune` of a script that prints one line, is "
            f"{f.fixed_s:.2f} s (median of 5); without it, aoe-runner's relay takes "
            f"{(statistics.median(w for w, _ in f.relay.tune) - f.fixed_s) / statistics.median(w for w, _ in f.relay.tee):.2f}x "
            "tee's time. The floor row is the script's own speed into a pipe that keeps nothing: where tee matches it,",
            "no relay can be faster.",
            "",
            f"Supervision cost while the script sleeps {SLEEP_S} s, sampled over {f.sampled_s:.0f} s of the sleep:",
            f"aoe-runner's own CPU time is {supervisor_ms:.0f} ms ({f.supervisor_cpu_pct:.3f}% of one core); the",
            f"sleeping script's is {f.script_cpu_pct:.3f}%. The kernel counts CPU time in 10 ms ticks, so one",
            f"tick more or less is {tick_pct:.2f}% here.",
            "",
            f"`runs list` with {RUNS:,} recorded runs (median of 7): {f.list_s * 1000:.0f} ms for the newest 20",
            f"and {f.list_all_s * 1000:.0f} ms with `--all`. Baseline: a bare `sqlite3` query of the same 20 rows",
            f"in a fresh Python, {f.list_baseline_s * 1000:.0f} ms (ratio {f.list_s / f.list_baseline_s:.2f}). Rebuilding a lost",
            f"index from {RUNS:,} manifests took {f.reindex_s:.2f} s, once.",
            "",
        ]
    )


def _load(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.2f}" for value in load)


def target_rows(figures: TuneFigures) -> list[tuple[str, str, float, float, bool]]:
    return [
        ("`tune` log relay / tee", "<= 1.15", figures.relay_ratio, 1.15, False),
        ("supervision CPU, % of one core", "<= 1.00", figures.supervisor_cpu_pct, 1.0, False),
        ("`runs list`, 10,000 runs (ms)", "<= 500", figures.list_s * 1000, 500, False),
    ]
