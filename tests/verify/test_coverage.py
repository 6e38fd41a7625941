"""Do verify's 95% intervals cover the true speed-up 95% of the time? Seeded trials on synthetic training logs.

Each trial writes MindSpore logs for baseline (50 ms a step) and tuned (40 ms) runs, the way a script prints them:
three compile-time steps 10x slower, a run-to-run factor exp(N(0, run_sd)) and a step factor exp(N(0, step_sd)).
Step times are lognormal around each run's level, so the median, mean, P95 and P99 of a run all scale with that
level, and the true speed-up of every statistic is exactly 50 / 40 = 1.25. The logs go through the same parsing,
warm-up and statistics as `aoe-runner verify`. Coverage must be 95% within three binomial standard deviations.

The default run is two scenarios, 300 trials each (a few seconds). `python -m pytest -m coverage tests/verify` runs the
long version: more trials, 2, 3 and 5 runs per arm, with and without run-to-run variation, and the power claim.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pytest

from aoe_runner.verify.stats import Comparison, Verdict, compare
from aoe_runner.verify.steps import default_warmup, detect_format

TRUE_SPEEDUP = 50 / 40


@dataclass(frozen=True)
class Scenario:
    runs: int
    steps: int
    run_sd: float
    step_sd: float


def log_text(rng: random.Random, step_ms: float, scenario: Scenario) -> str:
    level = step_ms * math.exp(rng.gauss(0, scenario.run_sd))
    lines = []
    for step in range(scenario.steps):
        ms = level * (10 if step < 3 else 1) * math.exp(rng.gauss(0, scenario.step_sd))
        lines.append(f"epoch: 1 step: {step}, loss is 0.1234\nepoch time: 1000.0 ms, per step time: {ms:.4f} ms")
    return "\n".join(lines) + "\n"


def verified(trial: int, scenario: Scenario, true_speedup: float = TRUE_SPEEDUP, samples: int = 2_000) -> Comparison:
    rng = random.Random(trial)
    logs = {
        arm: [log_text(rng, ms, scenario) for _ in range(scenario.runs)] for arm, ms in (("b", 50.0), ("t", 50 / true_speedup))
    }
    chosen = detect_format(logs["b"][:1])
    assert chosen is not None
    arms = []
    for arm in ("b", "t"):
        times = [chosen.step_times_ms(text) for text in logs[arm]]
        arms.append([run[default_warmup(len(run)) :] for run in times])
    return compare(arms[0], arms[1], 2.0, samples=samples, seed=trial)


def coverage(scenario: Scenario, trials: int, first: int = 0) -> dict[str, float]:
    hits = {"median": 0, "mean": 0, "p95": 0, "p99": 0}
    for trial in range(first, first + trials):
        for change in verified(trial, scenario).changes:
            hits[change.statistic] += change.ci_low <= TRUE_SPEEDUP <= change.ci_high
    return {statistic: count / trials for statistic, count in hits.items()}


def assert_about_95(covered: dict[str, float], trials: int) -> None:
    allowed = 3 * math.sqrt(0.95 * 0.05 / trials)
    assert all(abs(share - 0.95) <= allowed for share in covered.values()), (covered, f"0.95 ± {allowed:.3f}")


@pytest.mark.slow  # a thousand simulated verifications each
@pytest.mark.parametrize(
    "scenario",
    [
        Scenario(runs=3, steps=50, run_sd=0.01, step_sd=0.02),  # the default --repeats
        Scenario(runs=2, steps=50, run_sd=0.02, step_sd=0.01),  # the fewest a gate accepts; run-to-run variation dominates
    ],
    ids=["3-runs", "2-runs"],
)
def test_the_95_percent_interval_covers_the_true_speedup_95_percent_of_the_time(scenario: Scenario) -> None:
    """Before gates, verify's percentile interval covered the 2-run case 68% of the time (median only)."""
    assert_about_95(coverage(scenario, trials=300), 300)


@pytest.mark.coverage
@pytest.mark.parametrize(
    "scenario",
    [
        Scenario(runs=2, steps=100, run_sd=0.02, step_sd=0.01),
        Scenario(runs=3, steps=100, run_sd=0.0, step_sd=0.02),
        Scenario(runs=3, steps=200, run_sd=0.02, step_sd=0.01),
        Scenario(runs=5, steps=50, run_sd=0.01, step_sd=0.03),
    ],
    ids=lambda s: f"{s.runs}runs-{s.steps}steps-run{s.run_sd}-step{s.step_sd}",
)
def test_coverage_holds_across_designs(scenario: Scenario) -> None:
    assert_about_95(coverage(scenario, trials=1_500, first=10_000), 1_500)


@pytest.mark.coverage
def test_a_true_speedup_the_size_of_the_detectable_effect_is_found_about_80_percent_of_the_time() -> None:
    """The detectable effect is exp((t.975 + t.80) x SE): a true speed-up that size is called faster 80% of the time.
    Its SE is estimated anew in each trial; the root mean square over trials estimates the true one."""
    scenario = Scenario(runs=3, steps=50, run_sd=0.01, step_sd=0.02)
    logs = [math.log1p(verified(trial, scenario, true_speedup=1.0).change("median").detectable_pct / 100) for trial in range(300)]
    effect = math.exp(math.sqrt(sum(value * value for value in logs) / len(logs)))
    found = sum(verified(trial, scenario, true_speedup=effect).verdict is Verdict.FASTER for trial in range(1_000, 1_600))
    assert abs(found / 600 - 0.80) <= 3 * math.sqrt(0.80 * 0.20 / 600), (found / 600, effect)
