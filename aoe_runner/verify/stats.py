"""Is tuned faster than baseline? Four statistics per run, each arm the median over its runs, a run-blocked bootstrap.

Each run is summarised by its median, mean, P95 and P99 step time; an arm's value of each is the median over its
runs, so one noisy run out of three cannot move it. Speed-up = baseline / tuned: above 1, tuned is faster (for P95
and P99: its slow steps are shorter).

Intervals come from one bootstrap that resamples runs with replacement within each arm (run-level blocking): a
run's steps stay together, so the spread holds both run-to-run and step-to-step variation, and every statistic is
read from the same resampled runs. A resample is kept as its multiset of runs with how often it was drawn, so the
four statistics cost a few medians each whatever the number of steps. The interval is log(speed-up) ± t · c(k) · SE
on the log scale: SE is the bootstrap standard deviation of log(speed-up) (the arms are resampled independently, so
their variances add), t Student's quantile with Welch–Satterthwaite degrees of freedom from each arm's variance and
runs, c(k) = SE_SCALE, a factor by the number of runs k calibrated by simulation.
Percentiles of a bootstrap over so few runs do not cover what they claim: the two-stage percentile interval verify
used before (runs, then each run's steps, resampled) covered the true speed-up 68% of the time with 2 runs and 92%
with 3 in tests/verify/test_coverage.py's scenarios, and 99.7% with no run-to-run variation, where it counted the
step noise twice. t, Welch's degrees of freedom and SE_SCALE below bring every design tested there to 95%.

An arm with one run has no run-to-run variation to resample: its variance comes from resampling that run's steps
(the m-th smallest of n values drawn with replacement is the run's value at rank ceil(U·n), U ~ Beta(m, n-m+1); a
resampled mean is normal with the steps' variance / n), the degrees of freedom are infinite, and the interval covers
step noise only.

Minimum detectable effect: exp((t.975 + t.80) · c(k) · SE) - 1, the smallest true change this design would detect 80% of
the time at the 95% level, from the noise it observed.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from pydantic import BaseModel, Field

from aoe_runner.verify.steps import LONGEST_MS, SHORTEST_MS
from aoe_runner.verify.student import t_quantile

BOOTSTRAP_SAMPLES = 10_000
CONFIDENCE = 0.95
POWER = 0.80
SEED = 0  # fixed, so the same logs always give the same interval
Statistic = Literal["median", "mean", "p95", "p99"]
STATISTICS: tuple[Statistic, ...] = ("median", "mean", "p95", "p99")
_QUANTILE = {"median": 0.5, "p95": 0.95, "p99": 0.99}
# With few runs neither the bootstrap's spread of a median of k runs nor Welch's degrees of freedom is exact (the
# bootstrap halves the variance with 2 runs and overstates it with 3). This factor on SE, by k, makes the whole rule
# cover 95% when the runs' figures are normally distributed (tests/verify/calibrate.py: exact bootstrap variances,
# 100,000 simulated comparisons per k). Beyond the table the bootstrap is taken as it is (a little wide).
SE_SCALE = {
    2: 0.949, 3: 0.748, 4: 0.859, 5: 0.796, 6: 0.875, 7: 0.859, 8: 0.919, 9: 0.885, 10: 0.932, 11: 0.910, 12: 0.947,
    13: 0.922, 14: 0.962, 15: 0.937, 16: 0.963,
}  # fmt: skip


class Verdict(str, Enum):
    FASTER = "faster"
    SLOWER = "slower"
    NO_CHANGE = "no significant change"


class ArmSummary(BaseModel):
    arm: str
    runs: int
    steps: int = Field(description="Step times measured, after warm-up, over all runs of the arm.")
    median_ms: float = Field(description="Median of the runs' median step times.")
    mean_ms: float = Field(description="Median of the runs' mean step times.")
    p95_ms: float = Field(description="Median of the runs' 95th-percentile step times.")
    p99_ms: float = Field(description="Median of the runs' 99th-percentile step times.")
    p10_ms: float = Field(description="10th percentile of all measured step times.")
    p90_ms: float
    run_medians_ms: list[float]


class Change(BaseModel):
    """One statistic, baseline against tuned."""

    statistic: Statistic
    baseline_ms: float
    tuned_ms: float
    speedup: float = Field(description="baseline_ms / tuned_ms: above 1, tuned is faster (P95, P99: its slow steps).")
    ci_low: float = Field(description="Lower end of the speed-up's interval.")
    ci_high: float
    change_pct: float = Field(description="Tuned against baseline, in %: tuned_ms / baseline_ms - 1; negative is faster.")
    change_ci_low_pct: float = Field(description="The interval of change_pct (from 1 / ci_high - 1).")
    change_ci_high_pct: float = Field(description="From 1 / ci_low - 1: the most tuned may be slower, at this confidence.")
    degrees_of_freedom: float | None = Field(description="Of the t quantile; None: infinite (an arm with one run).")
    detectable_pct: float = Field(
        description="Minimum detectable effect: the smallest true change, in % of the speed-up, this design would "
        "detect 80% of the time at the 95% level, from the noise observed."
    )


class Comparison(BaseModel):
    baseline: ArmSummary
    tuned: ArmSummary
    speedup: float = Field(description="Baseline median / tuned median: above 1 means tuned is faster.")
    ci_low: float
    ci_high: float
    confidence: float = CONFIDENCE
    bootstrap_samples: int = BOOTSTRAP_SAMPLES
    interval_covers: Literal["runs and steps", "steps only"] = Field(
        description="What the intervals' spread comes from: 'steps only' when an arm has one run, so run-to-run "
        "variation is not measured at all."
    )
    changes: list[Change] = Field(description="Median (the verdict's), mean, P95 and P99, each with its interval.")
    threshold_pct: float
    verdict: Verdict
    explanation: str

    def change(self, statistic: Statistic) -> Change:
        return next(change for change in self.changes if change.statistic == statistic)


def compare(
    baseline: Sequence[Sequence[float]],
    tuned: Sequence[Sequence[float]],
    threshold_pct: float,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = SEED,
    compared: Sequence[Statistic] = STATISTICS,
) -> Comparison:
    """baseline and tuned: per run, its step times in ms after warm-up (steps.StepFormat gives only usable ones).

    compared: the statistics to compare, the median first (the verdict's); the gates need all four.
    """
    _check(baseline)
    _check(tuned)
    if not compared or compared[0] != "median":
        raise ValueError("compare needs the median first: the verdict is the median's")
    rng = random.Random(seed)
    base = _Arm([sorted(run) for run in baseline], samples, rng)
    tune = _Arm([sorted(run) for run in tuned], samples, rng)
    changes = [_change(statistic, base, tune, rng) for statistic in compared]
    median = changes[0]
    steps_only = min(len(base.runs), len(tune.runs)) == 1
    verdict, explanation = _verdict(median, threshold_pct, steps_only)
    return Comparison(
        baseline=_summarise("baseline", base),
        tuned=_summarise("tuned", tune),
        speedup=median.speedup,
        ci_low=median.ci_low,
        ci_high=median.ci_high,
        bootstrap_samples=samples,
        interval_covers="steps only" if steps_only else "runs and steps",
        changes=changes,
        threshold_pct=threshold_pct,
        verdict=verdict,
        explanation=explanation,
    )


def _check(runs: Sequence[Sequence[float]]) -> None:
    """At least one run, each with step times between 1 ns and 10^12 ms: then every ratio below is finite and positive."""
    if not runs or not all(run and all(SHORTEST_MS <= value <= LONGEST_MS for value in run) for run in runs):
        raise ValueError("compare needs at least one run per arm, each with step times from 1 ns to 10^12 ms")


@dataclass(frozen=True)
class RunFigures:
    median: float
    mean: float
    p95: float
    p99: float


def run_figures(sorted_run: Sequence[float]) -> RunFigures:
    return RunFigures(
        median=statistics.median(sorted_run),
        mean=math.fsum(sorted_run) / len(sorted_run),
        p95=quantile(sorted_run, 0.95),
        p99=quantile(sorted_run, 0.99),
    )


class _Arm:
    """An arm's runs, their figures, and its bootstrap resamples: distinct multisets of runs with their counts."""

    def __init__(self, sorted_runs: list[list[float]], samples: int, rng: random.Random) -> None:
        self.runs = sorted_runs
        self.samples = samples
        self.figures = [run_figures(run) for run in sorted_runs]
        self.resamples = _resample_runs(len(sorted_runs), samples, rng) if len(sorted_runs) > 1 else []

    def value(self, statistic: Statistic) -> float:
        return statistics.median(getattr(figures, statistic) for figures in self.figures)

    def log_variance(self, statistic: Statistic, rng: random.Random) -> float:
        """The bootstrap variance of log(value): over resampled runs, or, with one run, over its resampled steps."""
        if self.resamples:
            values = [getattr(figures, statistic) for figures in self.figures]
            logs = [(math.log(statistics.median([values[i] for i in chosen])), count) for chosen, count in self.resamples]
            return _weighted_variance(logs)
        (run,) = self.runs
        if statistic == "mean":
            return _weighted_variance([(value, 1) for value in run]) / len(run) / self.figures[0].mean ** 2  # delta method
        draws = [math.log(_resampled_quantile(run, _QUANTILE[statistic], rng)) for _ in range(self.samples)]
        return _weighted_variance([(value, 1) for value in draws])


def _resample_runs(k: int, samples: int, rng: random.Random) -> list[tuple[tuple[int, ...], int]]:
    """samples draws of k runs out of k with replacement, as (sorted run indices, times drawn), in index order."""
    indices = range(k)
    return sorted(Counter(tuple(sorted(rng.choices(indices, k=k))) for _ in range(samples)).items())


def _weighted_variance(values: list[tuple[float, int]]) -> float:
    total = sum(count for _, count in values)
    mean = math.fsum(value * count for value, count in values) / total
    return math.fsum(count * (value - mean) ** 2 for value, count in values) / total


def _resampled_quantile(run: list[float], q: float, rng: random.Random) -> float:
    """The rank-ceil(q·n) value of n steps drawn with replacement from the sorted run, drawn directly."""
    n = len(run)
    m = min(n, max(1, math.ceil(q * n)))
    u = rng.betavariate(m, n - m + 1)
    return run[max(0, math.ceil(u * n) - 1)]


def _change(statistic: Statistic, base: _Arm, tuned: _Arm, rng: random.Random) -> Change:
    base_ms, tuned_ms = base.value(statistic), tuned.value(statistic)
    variances = (base.log_variance(statistic, rng), tuned.log_variance(statistic, rng))
    runs = (len(base.runs), len(tuned.runs))
    df = _welch(variances, runs)
    se = math.sqrt(sum(variances)) * SE_SCALE.get(min(runs), 1.0)
    half = t_quantile(1 - (1 - CONFIDENCE) / 2, df) * se
    detectable = (t_quantile(1 - (1 - CONFIDENCE) / 2, df) + t_quantile(POWER, df)) * se
    speedup = base_ms / tuned_ms
    low, high = speedup * math.exp(-half), speedup * math.exp(half)
    return Change(
        statistic=statistic,
        baseline_ms=base_ms,
        tuned_ms=tuned_ms,
        speedup=speedup,
        ci_low=low,
        ci_high=high,
        change_pct=(tuned_ms / base_ms - 1) * 100,
        change_ci_low_pct=(1 / high - 1) * 100,
        change_ci_high_pct=(1 / low - 1) * 100,
        degrees_of_freedom=None if math.isinf(df) else df,
        detectable_pct=math.expm1(detectable) * 100,
    )


def _welch(variances: tuple[float, float], runs: tuple[int, int]) -> float:
    """Welch–Satterthwaite degrees of freedom; an arm with one run adds none of its own (its variance is from steps)."""
    spread = sum(v * v / (k - 1) for v, k in zip(variances, runs, strict=True) if k > 1)
    if spread > 0:
        return sum(variances) ** 2 / spread
    return math.inf if 1 in runs else float(sum(k - 1 for k in runs))  # all from steps, or no spread at all


def _summarise(name: str, arm: _Arm) -> ArmSummary:
    every = sorted(value for run in arm.runs for value in run)
    return ArmSummary(
        arm=name,
        runs=len(arm.runs),
        steps=len(every),
        median_ms=arm.value("median"),
        mean_ms=arm.value("mean"),
        p95_ms=arm.value("p95"),
        p99_ms=arm.value("p99"),
        p10_ms=quantile(every, 0.10),
        p90_ms=quantile(every, 0.90),
        run_medians_ms=[figures.median for figures in arm.figures],
    )


def _verdict(median: Change, threshold_pct: float, steps_only: bool) -> tuple[Verdict, str]:
    level = f"{CONFIDENCE:.0%}"
    caveat = (
        "; with one run per arm the interval covers step-to-step noise only, not run-to-run variation: "
        "use --repeats 2 or more before relying on it"
        if steps_only
        else ""
    )
    if median.ci_low > 1:
        return Verdict.FASTER, f"tuned is faster: the {level} interval of the speed-up lies above 1{caveat}"
    slowdown_pct = median.change_pct
    if median.ci_high < 1 and slowdown_pct > threshold_pct:
        return Verdict.SLOWER, f"tuned is {slowdown_pct:.1f}% slower, beyond the {threshold_pct:g}% threshold{caveat}"
    if median.ci_high < 1:
        return Verdict.NO_CHANGE, f"tuned is {slowdown_pct:.1f}% slower, within the {threshold_pct:g}% threshold{caveat}"
    return Verdict.NO_CHANGE, f"the {level} interval of the speed-up includes 1; {_power(median, threshold_pct)}{caveat}"


def _power(median: Change, threshold_pct: float) -> str:
    detectable = f"a true speed-up of {median.detectable_pct:.1f}% or more would have shown 80% of the time"
    if median.detectable_pct <= threshold_pct:
        return f"{detectable}, so any change is likely smaller than that"
    return f"only {detectable}: too few runs or steps to rule out a smaller change (more --repeats narrow it)"


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks."""
    position = q * (len(sorted_values) - 1)
    below = math.floor(position)
    above = min(below + 1, len(sorted_values) - 1)
    return sorted_values[below] + (sorted_values[above] - sorted_values[below]) * (position - below)
