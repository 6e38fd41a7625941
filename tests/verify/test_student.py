"""Student's t quantiles against published tables, since scipy is not a dependency."""

from __future__ import annotations

import math

import pytest

from aoe_runner.verify.student import t_cdf, t_quantile


@pytest.mark.parametrize(
    ("df", "q975", "q80"),
    [(1, 12.7062, 1.3764), (2, 4.3027, 1.0607), (3, 3.1824, 0.9785), (4, 2.7764, 0.9410), (5, 2.5706, 0.9195),
     (10, 2.2281, 0.8791), (30, 2.0423, 0.8538), (120, 1.9799, 0.8446), (math.inf, 1.9600, 0.8416)],
)  # fmt: skip
def test_quantiles_match_the_tables(df: float, q975: float, q80: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(q975, abs=1e-4)
    assert t_quantile(0.80, df) == pytest.approx(q80, abs=1e-4)
    assert t_quantile(0.025, df) == -t_quantile(0.975, df)


@pytest.mark.parametrize("df", [1.01, 1.5, 2.7, 6.3, 47.9, 5e4])
def test_fractional_degrees_of_freedom_invert_the_cdf(df: float) -> None:
    for p in (0.6, 0.8, 0.975, 0.999):
        assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-10)
    assert t_quantile(0.975, 1.5) > t_quantile(0.975, 2) > t_quantile(0.975, 2.7)


@pytest.mark.parametrize(("p", "df"), [(0, 3), (1, 3), (0.5, 0), (0.9, -1)])
def test_impossible_arguments_are_refused(p: float, df: float) -> None:
    with pytest.raises(ValueError):
        t_quantile(p, df)
