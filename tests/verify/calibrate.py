"""Where stats.SE_SCALE comes from: `python -m tests.verify.calibrate [K ...]` prints the factor for each run count K.

verify's interval is log(speed-up) ± scale(k) · t(Welch df) · SE, SE the bootstrap standard deviation of log(speed-up)
over runs resampled within each arm. With few runs the bootstrap misjudges the spread of a median of k values, so
scale(k) is chosen to make the interval cover the truth 95% of the time when each arm's k run figures are normally
distributed with the same spread. Each of 100,000 simulated comparisons uses the exact bootstrap variance of the
median of k resampled runs (no Monte Carlo error), and scale(k) is the 95th percentile of |estimate| / (t · SE).
The figures after it: coverage with that scale when the tuned arm's spread is 0.5, 0.2 or 0 of the baseline's,
and with heavy-tailed (t3) or skewed run figures.
"""

from __future__ import annotations

import math
import random
import statistics
import sys
from collections.abc import Callable
from functools import cache

from aoe_runner.verify.student import t_quantile

TRIALS = 100_000


@cache
def atoms(k: int) -> list[tuple[int, int, float]]:
    """The bootstrap distribution of the median of k values drawn with replacement from k sorted values:
    (i, j, p), the median being the mean of the i-th and j-th values (0-based) with probability p."""
    return _odd_atoms(k) if k % 2 else _even_atoms(k)


def _odd_atoms(k: int) -> list[tuple[int, int, float]]:
    m = (k + 1) // 2

    def at_most(j: int) -> float:  # P(median <= x_j) = P(at least m draws among the j smallest)
        return sum(math.comb(k, r) * (j / k) ** r * (1 - j / k) ** (k - r) for r in range(m, k + 1))

    return [(j - 1, j - 1, at_most(j) - at_most(j - 1)) for j in range(1, k + 1)]


def _even_atoms(k: int) -> list[tuple[int, int, float]]:
    a = k // 2
    out = []
    for i in range(1, k + 1):
        below, here = (i - 1) / k, 1 / k
        for j in range(i + 1, k + 1):  # a draws at or below x_i, one of them x_i; then x_j is the next
            above = (k - j) / k
            out.append((i - 1, j - 1, math.comb(k, a) * ((below + here) ** a - below**a) * ((here + above) ** a - above**a)))
        same = sum(
            math.factorial(k) / (math.factorial(n_below) * math.factorial(n_here) * math.factorial(k - n_below - n_here))
            * below**n_below * here**n_here * (1 - below - here) ** (k - n_below - n_here)
            for n_below in range(a)
            for n_here in range(a + 1 - n_below, k - n_below + 1)
        )  # fmt: skip
        out.append((i - 1, i - 1, same))
    return out


def bootstrap_variance(values: list[float]) -> float:
    ordered = sorted(values)
    medians = [((ordered[i] + ordered[j]) / 2, p) for i, j, p in atoms(len(values))]
    mean = sum(value * p for value, p in medians)
    return sum(p * (value - mean) ** 2 for value, p in medians)


def welch(variances: tuple[float, float], k: int) -> float:
    spread = sum(v * v for v in variances) / (k - 1)
    return sum(variances) ** 2 / spread if spread > 0 else 2.0 * (k - 1)


def needed(k: int, tuned_spread: float, draw: Callable[[random.Random], float], trials: int, seed: int) -> list[float]:
    """Per simulated comparison, the scale its interval would need to just cover the truth (0)."""
    rng = random.Random(seed)
    out = []
    for _ in range(trials):
        base = [draw(rng) for _ in range(k)]
        tuned = [tuned_spread * draw(rng) for _ in range(k)]
        variances = (bootstrap_variance(base), bootstrap_variance(tuned))
        se = math.sqrt(sum(variances))
        estimate = abs(statistics.median(base) - statistics.median(tuned))
        out.append(estimate / (t_quantile(0.975, welch(variances, k)) * se) if se > 0 else 0.0)
    return out


DRAWS: dict[str, Callable[[random.Random], float]] = {
    "normal": lambda rng: rng.gauss(0, 1),
    "t3": lambda rng: rng.gauss(0, 1) / math.sqrt(rng.gammavariate(1.5, 2) / 3),
    "skewed": lambda rng: rng.expovariate(1) - math.log(2),  # median 0
}


def scale(k: int, trials: int = TRIALS) -> float:
    return sorted(needed(k, 1.0, DRAWS["normal"], trials, seed=k))[int(0.95 * trials)]


def coverage(k: int, factor: float, tuned_spread: float, draw: str, trials: int) -> float:
    return sum(s <= factor for s in needed(k, tuned_spread, DRAWS[draw], trials, seed=1000 + k)) / trials


if __name__ == "__main__":
    for k in map(int, sys.argv[1:] or range(2, 13)):
        factor = scale(k)
        checks = [f"{coverage(k, factor, spread, 'normal', 10_000):.3f}" for spread in (0.5, 0.2, 0.0)]
        checks += [f"{draw} {coverage(k, factor, 1.0, draw, 10_000):.3f}" for draw in ("t3", "skewed")]
        print(f"{k}: {factor:.3f}  (coverage with tuned spread 0.5, 0.2, 0: {', '.join(checks)})", flush=True)
