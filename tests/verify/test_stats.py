"""The verdict's statistics, on step times made up to the purpose."""

from __future__ import annotations

import math
import random

import pytest

from aoe_runner.verify.stats import Verdict, compare
from aoe_runner.verify.student import t_quantile


def _runs(rng: random.Random, medians: list[float], steps: int = 200, noise: float = 0.01) -> list[list[float]]:
    return [[m * (1 + rng.gauss(0, noise)) for _ in range(steps)] for m in medians]


def test_swapping_the_arms_inverts_the_speedup_and_its_interval() -> None:
    rng = random.Random(3)
    base, tuned = _runs(rng, [50, 51, 49]), _runs(rng, [40, 41, 40])
    forward, backward = compare(base, tuned, 2.0), compare(tuned, base, 2.0)
    assert forward.speedup == pytest.approx(1 / backward.speedup)
    assert forward.verdict is Verdict.FASTER and backward.verdict is Verdict.SLOWER
    assert forward.ci_low == pytest.approx(1 / backward.ci_high, rel=0.01)


def test_the_same_logs_give_the_same_interval() -> None:
    rng = random.Random(4)
    base, tuned = _runs(rng, [50, 50, 50]), _runs(rng, [49, 50, 51])
    assert compare(base, tuned, 2.0) == compare(base, tuned, 2.0)


def test_pooling_would_be_fooled_by_one_slow_run_blocking_is_not() -> None:
    rng = random.Random(5)
    base, tuned = _runs(rng, [50, 50, 65]), _runs(rng, [50, 50, 50])
    result = compare(base, tuned, 2.0)
    pooled_base = sorted(v for run in base for v in run)
    pooled_tuned = sorted(v for run in tuned for v in run)
    assert sum(pooled_base) / len(pooled_base) > 1.08 * sum(pooled_tuned) / len(pooled_tuned)  # what pooling sees
    assert result.speedup == pytest.approx(1.0, abs=0.01)
    assert result.verdict is Verdict.NO_CHANGE


def test_arm_summaries() -> None:
    result = compare([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]], [[1.0]], 2.0, samples=100)
    assert result.baseline.run_medians_ms == [2.0, 5.5]
    assert (result.baseline.runs, result.baseline.steps, result.baseline.median_ms) == (2, 7, 3.75)
    assert result.tuned.p10_ms == result.tuned.p90_ms == 1.0


def test_mean_p95_and_p99_each_get_an_interval_and_see_a_longer_tail_the_median_misses() -> None:
    rng = random.Random(6)
    base = _runs(rng, [50, 50, 50])
    tuned = [[v * (1.4 if i % 10 == 9 else 1) for i, v in enumerate(run)] for run in _runs(rng, [50, 50, 50])]
    result = compare(base, tuned, 2.0)
    assert [change.statistic for change in result.changes] == ["median", "mean", "p95", "p99"]
    median, mean, p95, p99 = result.changes
    assert median.ci_low < 1 < median.ci_high and result.verdict is Verdict.NO_CHANGE
    assert mean.change_pct == pytest.approx(4, abs=0.5) and mean.change_ci_low_pct > 0  # 10% of steps 40% slower
    for tail in (p95, p99):
        assert tail.change_pct == pytest.approx(40, abs=3)
        assert tail.change_ci_low_pct <= tail.change_pct <= tail.change_ci_high_pct
        assert tail.ci_high < 1  # tuned's tail is slower: its speed-up is below 1
    assert (result.tuned.p95_ms, result.tuned.p99_ms) == (p95.tuned_ms, p99.tuned_ms)
    assert result.baseline.mean_ms == mean.baseline_ms


def test_one_run_per_arm_covers_step_noise_only_and_says_so() -> None:
    rng = random.Random(9)
    result = compare(_runs(rng, [50]), _runs(rng, [45]), 2.0)
    assert result.interval_covers == "steps only"
    assert result.verdict is Verdict.FASTER
    assert result.explanation.endswith(
        "; with one run per arm the interval covers step-to-step noise only, not run-to-run variation: "
        "use --repeats 2 or more before relying on it"
    )
    assert all(change.degrees_of_freedom is None for change in result.changes)
    several = compare(_runs(rng, [50, 50]), _runs(rng, [45, 45]), 2.0)
    assert several.interval_covers == "runs and steps" and "step-to-step noise only" not in several.explanation


def test_the_minimum_detectable_effect_tells_too_few_runs_from_no_change() -> None:
    """Same speed in both arms: a noisy pair of runs cannot rule out 10%; five quiet runs rule out 2%."""
    rng = random.Random(10)
    noisy = compare(_runs(rng, [50, 55]), _runs(rng, [52, 49]), 2.0)
    quiet = compare(_runs(rng, [50, 50.1, 49.9, 50, 50.05]), _runs(rng, [50.05, 49.95, 50, 50.1, 49.9]), 2.0)
    for result in (noisy, quiet):
        assert result.verdict is Verdict.NO_CHANGE and result.ci_low < 1 < result.ci_high
    assert noisy.change("median").detectable_pct > 10
    assert "too few runs or steps to rule out a smaller change (more --repeats narrow it)" in noisy.explanation
    assert quiet.change("median").detectable_pct < 1
    assert "so any change is likely smaller than that" in quiet.explanation


def test_the_detectable_effect_is_what_the_interval_can_exclude() -> None:
    """(t.975 + t.80) x SE against the interval's t.975 x SE: the MDE is a little over the half-width, on the log scale."""
    rng = random.Random(11)
    median = compare(_runs(rng, [50, 51, 49]), _runs(rng, [50, 50.5, 49.5]), 2.0).change("median")
    assert median.degrees_of_freedom is not None
    half = math.log(median.ci_high / median.speedup)
    ratio = (t_quantile(0.975, median.degrees_of_freedom) + t_quantile(0.8, median.degrees_of_freedom)) / t_quantile(
        0.975, median.degrees_of_freedom
    )
    assert math.log1p(median.detectable_pct / 100) == pytest.approx(half * ratio)
