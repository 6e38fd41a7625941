"""The verdict's statistics, on step times made up to the purpose."""

from __future__ import annotations

import random

import pytest

from aoe_runner.verify.stats import Verdict, compare


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
