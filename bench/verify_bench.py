"""The `verify` benchmarks, run by bench/run.py in the same run as the others.

- statistics: `compare()` on 100,000 step times (2 arms x 3 runs), against sorting the same values once;
- overhead: `aoe-runner verify --repeats 3` against the same six runs of the same script started by hand
  (one after another, with the same environments), interleaved round by round.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIMULATOR = ROOT / "tests" / "simulator" / "train.py"
STEP_TIMES = 100_000
RUN_STEPS = 200  # x 50 ms: a 10 s run, short for training but long enough to show verify's fixed costs
SCRIPT_ARGS = ["steps", str(RUN_STEPS), "--sleep", "--bank-factor", "0.9"]


@dataclass
class VerifyFigures:
    stats_s: float
    sort_s: float
    verify_s: float
    by_hand_s: float
    rounds: int

    @property
    def overhead_pct(self) -> float:
        return (self.verify_s / self.by_hand_s - 1) * 100


def measure(rounds: int) -> VerifyFigures:
    sys.path.insert(0, str(ROOT))
    from aoe_runner.verify.stats import compare

    rng = random.Random(0)
    runs = [[rng.gauss(50, 2) for _ in range(STEP_TIMES // 6)] for _ in range(6)]
    stats_times, sort_times = [], []
    for _ in range(5):
        start = time.perf_counter()
        compare(runs[:3], runs[3:], 2.0)
        stats_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        sorted(value for run in runs for value in run)
        sort_times.append(time.perf_counter() - start)
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
    return VerifyFigures(
        statistics.median(stats_times),
        statistics.median(sort_times),
        statistics.median(verify_times),
        statistics.median(hand_times),
        rounds,
    )


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
            f"Statistics on {STEP_TIMES:,} step times (2 arms x 3 runs, 10,000 bootstrap samples), median of 5:",
            f"{f.stats_s * 1000:.0f} ms; sorting the same values once takes {f.sort_s * 1000:.0f} ms",
            f"(ratio {f.stats_s / f.sort_s:.1f}).",
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
            "inventory and relay. The fixed part does not grow with the runs, so real training runs (minutes) dilute it further.",
            "",
        ]
    )


def target_rows(f: VerifyFigures) -> list[tuple[str, str, float, float, bool]]:
    return [
        ("verify statistics, 100,000 step times (ms)", "<= 1000", f.stats_s * 1000, 1000, False),
        ("verify overhead over the same runs by hand (%)", "<= 2.0", f.overhead_pct, 2.0, False),
    ]
