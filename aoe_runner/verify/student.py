"""Student's t quantiles without scipy: the CDF from the regularised incomplete beta function, inverted by Newton."""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

_TINY = 1e-300
_EPSILON = 1e-15


@lru_cache(maxsize=256)
def t_quantile(p: float, df: float) -> float:
    """The p quantile of Student's t with df degrees of freedom (df > 0; math.inf gives the normal quantile)."""
    if not 0 < p < 1 or not df > 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, not p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    if p == 0.5:
        return 0.0
    if df > 1e5:  # within 1e-5 of the normal quantile, and the continued fraction slows down
        return NormalDist().inv_cdf(p)
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    return _newton(p, df)


def t_cdf(x: float, df: float) -> float:
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + x * x))
    return 1 - tail if x >= 0 else tail


def _newton(p: float, df: float) -> float:
    """From the normal quantile, which lies below; the CDF is concave above 0, so every step stays below the root."""
    x = NormalDist().inv_cdf(p)
    for _ in range(200):
        step = (p - t_cdf(x, df)) / _t_pdf(x, df)
        x += step
        if abs(step) <= 1e-12 * max(1.0, x):
            break
    return x


def _t_pdf(x: float, df: float) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(x * x / df))


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (Numerical Recipes, §6.4)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _continued_fraction(a, b, x) / a
    return 1 - front * _continued_fraction(b, a, 1 - x) / b


def _continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), by the modified Lentz method."""
    c, d = 1.0, _nonzero(1 - (a + b) * x / (a + 1))
    d = 1 / d
    result = d
    for m in range(1, 1000):
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        for coefficient in (even, odd):
            d = 1 / _nonzero(1 + coefficient * d)
            c = _nonzero(1 + coefficient / c)
            result *= d * c
        if abs(d * c - 1) < _EPSILON:
            break
    return result


def _nonzero(value: float) -> float:
    return value if abs(value) >= _TINY else _TINY
