"""The `verify` benchmarks, run by bench/run.py in the same run as the others (`python bench/verify_bench.py` alone).

- statistics: `compare()` on 100,000 step times (2 arms x 3 runs), against sorting the same values once;
- gates: the same with every gate (mean, P95 and P99 intervals, then all three gates judged) against the median
  alone, interleaved round by round, wall and CPU time, with the load average before and after;
- overhead: `aoe-runner verify --repeats 3` against the same six runs of the same script started by hand
  (one after another, with the same environments), interleaved round by round.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIMULATOR = ROOT / "tests" / "simulator" / "train.py"
STEP_TIMES = 100_000
STATS_ROUNDS = 15
RUN_STEPS = 200  # x 50 ms: a 10 s run, short for training but long enough to show verify's fixed costs
SCRIPT_ARGS = ["steps", str(RUN_STEPS), "--sleep", "--bank-factor", "0.9"]


@dataclass
class Timed:
    """Per round: wall and CPU seconds."""

    wall: list[float]
    cpu: list[float]

    @property
    def median_wall(self) -> float:
        return statistics.median(self.wall)

    @property
    def median_cpu(self) -> float:
        return statistics.median(self.cpu)

    def spread(self) -> str:
        return f"{min(self.wall) * 1000:.0f}-{max(self.wall) * 1000:.0f} ms"


@dataclass
class StatsFigures:
    median_only: Timed
    gated: Timed
    sort: Timed
    rounds: int
    load_before: float
    load_after: float

    @property
    def gates_pct(self) -> float:
        """By CPU time: on a shared machine the wall time also counts the waits for a CPU."""
        return (self.gated.median_cpu / self.median_only.median_cpu - 1) * 100

    @property
    def gates_wall_pct(self) -> float:
        return (self.gated.median_wall / self.median_only.median_wall - 1) * 100

    @property
    def gates_pct_range(self) -> tuple[float, float]:
        ratios = [(g / m - 1) * 100 for g, m in zip(self.gated.cpu, self.median_only.cpu, strict=True)]
        return min(ratios), max(ratios)


@dataclass
class VerifyFigures:
    stats: StatsFigures
    verify_s: float
    by_hand_s: float
    rounds: int

    @property
    def stats_s(self) -> float:
        return self.stats.gated.median_wall

    @property
    def overhead_pct(self) -> float:
        return (self.verify_s / self.by_hand_s - 1) * 100


def measure(rounds: int) -> VerifyFigures:
    stats_figures = measure_statistics(STATS_ROUNDS)
    verify_times, hand_times = [], []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "bank" / "soc").mkdir(parents=True)
        (root / "bank" / "soc" / "op.bin").write_bytes(b"tuned")
        (root / "empty").mkdir()
        env = {**os.environ, "AOE_RUNNER_HOME": str(root / "home"), "AOE_RUNNER_LOCK_DIR": str(root / "locks")}
        for _ in range(rounds):
            verify_times.append(
                _timed(
                    [sys.executable, "-m", "aoe_runner", "verify", str(SIMULATOR), "--bank", "bank", "--", *SCRIPT_ARGS],
                    env,
                    root,
                )
            )
            hand_times.append(_by_hand(env, root))
    return VerifyFigures(stats_figures, statistics.median(verify_times), statistics.median(hand_times), rounds)


def measure_statistics(rounds: int) -> StatsFigures:
    """The median alone, everything the gates need, and a sort, interleaved round by round on the same step times."""
    sys.path.insert(0, str(ROOT))
    from aoe_runner.verify.gates import Gates, evaluate
    from aoe_runner.verify.stats import compare

    rng = random.Random(0)
    runs = [[rng.gauss(50, 2) for _ in range(STEP_TIMES // 6)] for _ in range(6)]
    gates = Gates(min_speedup_pct=5, min_mean_speedup_pct=5, max_tail_regression_pct=2)
    cases: dict[str, Callable[[], object]] = {
        "median": lambda: compare(runs[:3], runs[3:], 2.0, compared=("median",)),
        "gated": lambda: evaluate(compare(runs[:3], runs[3:], 2.0), gates),
        "sort": lambda: sorted(value for run in runs for value in run),
    }
    times = {name: Timed([], []) for name in cases}
    load_before = os.getloadavg()[0]
    for round_number in range(rounds):
        order = list(cases) if round_number % 2 == 0 else list(reversed(cases))  # no case always runs first
        for name in order:
            case = cases[name]
            wall, cpu = time.perf_counter(), time.process_time()
            case()
            times[name].cpu.append(time.process_time() - cpu)
            times[name].wall.append(time.perf_counter() - wall)
    return StatsFigures(times["median"], times["gated"], times["sort"], rounds, load_before, os.getloadavg()[0])


def _timed(command: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _by_hand(env: dict[str, str], root: Path) -> float:
    """What a careful user would type: six runs, alternating the bank, with the cache forced and logs kept."""
    start = time.perf_counter()
    for repeat in range(3):
        for bank in ("empty", "bank"):
            run_env = {
                **env,
                "TUNE_BANK_PATH": str(root / bank),
                "ACL_OP_COMPILER_CACHE_MODE": "force",
                "OP_COMPILER_CACHE_MODE": "force",
            }
            with open(root / f"hand-{bank}-{repeat}.log", "wb") as log:
                subprocess.run(
                    [sys.executable, str(SIMULATOR), *SCRIPT_ARGS], env=run_env, cwd=root, check=True, stdout=log, stderr=log
                )
    return time.perf_counter() - start


def render(f: VerifyFigures) -> str:
    return "\n".join(
        [
            "## `aoe-runner verify`",
            "",
            "Measured by `python bench/verify_bench.py` (also run by `python bench/run.py`).",
            "",
            *render_statistics(f.stats),
            "",
            f"Overhead: `aoe-runner verify --repeats 3` on a script that sleeps through {RUN_STEPS} steps (about",
            f"{f.by_hand_s / 6:.1f} s a run), against the same six runs started by hand one after another (median of",
            f"{f.rounds} interleaved rounds):",
            "",
            "| command | median wall time | ratio |",
            "|---|---|---|",
            f"| six runs by hand | {f.by_hand_s:.2f} s | 1.000 |",
            f"| `aoe-runner verify` | {f.verify_s:.2f} s | {f.verify_s / f.by_hand_s:.3f} |",
            "",
            f"verify adds {f.overhead_pct:.1f}%: start-up, measuring the host once, and for each run its record, bank",
            "inventory, relay and the reading of its log. The fixed part does not grow with the runs, so real training runs",
            "(minutes) dilute it further.",
            "",
        ]
    )


def render_statistics(s: StatsFigures) -> list[str]:
    low, high = s.gates_pct_range
    return [
        f"Statistics on {STEP_TIMES:,} step times (2 arms x 3 runs, 10,000 bootstrap samples), {s.rounds} interleaved",
        f"rounds, load average {s.load_before:.2f} before and {s.load_after:.2f} after (`python bench/verify_bench.py",
        "--statistics` measures only these, in seconds):",
        "",
        "| statistics | median wall time | spread | median CPU time |",
        "|---|---|---|---|",
        f"| median speed-up only | {s.median_only.median_wall * 1000:.0f} ms | {s.median_only.spread()} |"
        f" {s.median_only.median_cpu * 1000:.0f} ms |",
        f"| with the gates: mean, P95, P99 intervals and every gate judged | {s.gated.median_wall * 1000:.0f} ms |"
        f" {s.gated.spread()} | {s.gated.median_cpu * 1000:.0f} ms |",
        f"| sorting the same values once | {s.sort.median_wall * 1000:.0f} ms | {s.sort.spread()} |"
        f" {s.sort.median_cpu * 1000:.0f} ms |",
        "",
        f"The gates add {s.gates_pct:.1f}% to the statistics' CPU time (per round {low:+.1f}% to {high:+.1f}%; wall time",
        f"{s.gates_wall_pct:+.1f}%, which also counts waiting for a CPU on this shared machine): every statistic",
        "is read from the same resampled runs, kept as distinct multisets with their counts, so each one more costs a few",
        "medians of three values, not another pass over the steps. Both rows include the arm summaries, which list every",
        "statistic (each run's mean is one more pass over its steps, in C); the rest of the time is drawing the",
        "resamples and sorting each run.",
    ]


def target_rows(f: VerifyFigures) -> list[tuple[str, str, float, float, bool]]:
    return [
        ("verify statistics with gates, 100,000 step times (ms)", "<= 1000", f.stats_s * 1000, 1000, False),
        ("verify gates' added statistics time (%)", "<= 20", f.stats.gates_pct, 20, False),
        ("verify overhead over the same runs by hand (%)", "<= 2.0", f.overhead_pct, 2.0, False),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--statistics", action="store_true", help="only the statistics and gates (seconds, not minutes)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the overhead benchmark")
    args = parser.parse_args()
    if args.statistics:
        print("\n".join(render_statistics(measure_statistics(STATS_ROUNDS))))
        return
    figures = measure(args.rounds)
    print(render(figures))
    for name, target, value, _, _ in target_rows(figures):
        print(f"| {name} | {target} | {value:.2f} |")


if __name__ == "__main__":
    main()
