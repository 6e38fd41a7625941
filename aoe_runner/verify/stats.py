"""Is tuned faster than baseline? Run-level blocked bootstrap over per-step times.

Each run is summarised by its median step time; each arm by the median of its runs' medians, so one
noisy run out of three cannot move the estimate. The speed-up is baseline / tuned. Its confidence
interval comes from a two-stage bootstrap: resample runs with replacement within each arm (run-level
blocking), then resample each chosen run's steps. The second stage needs no resampling loop: the
median of n values drawn with replacement from a run is its empirical quantile at a Beta(m, n-m+1)
variate, m = (n+1)//2 (the distribution of the m-th order statistic of n uniforms), so 100,000 step
times cost no more than 100.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from enum import Enum

from pydantic import BaseModel, Field

from aoe_runner.verify.steps import LONGEST_MS, SHORTEST_MS

BOOTSTRAP_SAMPLES = 10_000
CONFIDENCE = 0.95
SEED = 0  # fixed, so the same logs always give the same interval


class Verdict(str, Enum):
    FASTER = "faster"
    SLOWER = "slower"
    NO_CHANGE = "no significant change"


class ArmSummary(BaseModel):
    arm: str
    runs: int
    steps: int = Field(description="Step times measured, after warm-up, over all runs of the arm.")
    median_ms: float = Field(description="Median of the runs' median step times.")
    p10_ms: float = Field(description="10th percentile of all measured step times.")
    p90_ms: float
    run_medians_ms: list[float]


class Comparison(BaseModel):
    baseline: ArmSummary
    tuned: ArmSummary
    speedup: float = Field(description="Baseline median / tuned median: above 1 means tuned is faster.")
    ci_low: float
    ci_high: float
    confidence: float = CONFIDENCE
    bootstrap_samples: int = BOOTSTRAP_SAMPLES
    threshold_pct: float
    verdict: Verdict
    explanation: str


def compare(
    baseline: Sequence[Sequence[float]],
    tuned: Sequence[Sequence[float]],
    threshold_pct: float,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = SEED,
) -> Comparison:
    """baseline and tuned: per run, its step times in ms after warm-up (steps.StepFormat gives only usable ones)."""
    _check(baseline)
    _check(tuned)
    base_runs, tuned_runs = [sorted(run) for run in baseline], [sorted(run) for run in tuned]
    base, tune = summarise("baseline", base_runs), summarise("tuned", tuned_runs)
    speedup = base.median_ms / tune.median_ms
    low, high = _interval(base_runs, tuned_runs, samples, random.Random(seed))
    verdict, explanation = _verdict(speedup, low, high, threshold_pct)
    return Comparison(
        baseline=base,
        tuned=tune,
        speedup=speedup,
        ci_low=low,
        ci_high=high,
        bootstrap_samples=samples,
        threshold_pct=threshold_pct,
        verdict=verdict,
        explanation=explanation,
    )


def _check(runs: Sequence[Sequence[float]]) -> None:
    """At least one run, each with step times between 1 ns and 10^12 ms: then every ratio below is finite and positive."""
    if not runs or not all(run and all(SHORTEST_MS <= value <= LONGEST_MS for value in run) for run in runs):
        raise ValueError("compare needs at least one run per arm, each with step times from 1 ns to 10^12 ms")


def summarise(arm: str, sorted_runs: Sequence[Sequence[float]]) -> ArmSummary:
    medians = [statistics.median(run) for run in sorted_runs]
    every = sorted(value for run in sorted_runs for value in run)
    return ArmSummary(
        arm=arm,
        runs=len(sorted_runs),
        steps=len(every),
        median_ms=statistics.median(medians),
        p10_ms=_quantile(every, 0.10),
        p90_ms=_quantile(every, 0.90),
        run_medians_ms=medians,
    )


def _interval(base: list[list[float]], tuned: list[list[float]], samples: int, rng: random.Random) -> tuple[float, float]:
    ratios = sorted(_arm_draw(base, rng) / _arm_draw(tuned, rng) for _ in range(samples))
    tail = (1 - CONFIDENCE) / 2
    return _quantile(ratios, tail), _quantile(ratios, 1 - tail)


def _arm_draw(runs: list[list[float]], rng: random.Random) -> float:
    """One bootstrap replicate of an arm: runs resampled, then each chosen run's median resampled."""
    chosen = [runs[rng.randrange(len(runs))] for _ in runs]
    return statistics.median(_bootstrap_median(run, rng) for run in chosen)


def _bootstrap_median(run: list[float], rng: random.Random) -> float:
    n = len(run)
    m = (n + 1) // 2
    u = rng.betavariate(m, n - m + 1)
    return run[max(0, math.ceil(u * n) - 1)]


def _verdict(speedup: float, low: float, high: float, threshold_pct: float) -> tuple[Verdict, str]:
    level = f"{CONFIDENCE:.0%}"
    if low > 1:
        return Verdict.FASTER, f"tuned is faster: the {level} interval of the speed-up lies above 1"
    slowdown_pct = (1 / speedup - 1) * 100
    if high < 1 and slowdown_pct > threshold_pct:
        return Verdict.SLOWER, f"tuned is {slowdown_pct:.1f}% slower, beyond the {threshold_pct:g}% threshold"
    if high < 1:
        return Verdict.NO_CHANGE, f"tuned is {slowdown_pct:.1f}% slower, within the {threshold_pct:g}% threshold"
    return Verdict.NO_CHANGE, f"the {level} interval of the speed-up includes 1"


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks."""
    position = q * (len(sorted_values) - 1)
    below = math.floor(position)
    above = min(below + 1, len(sorted_values) - 1)
    return sorted_values[below] + (sorted_values[above] - sorted_values[below]) * (position - below)
