"""Histograms are binned in Python: every finite value in exactly one bin, bins in order, a bounded count."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from aoe_runner.render.html.charts import HISTOGRAM_BINS, histogram

SPEEDUPS = st.lists(st.floats(min_value=1e-6, max_value=1e6) | st.sampled_from([math.nan, math.inf, 1.0]), max_size=300)
# any float at all: subnormal, near the largest, negative (a time saved), with runs of equal values
ANY_FLOATS = st.lists(st.floats() | st.sampled_from([5e-324, 1e-323, 2.0, 1.7e308, -1.7e308]), max_size=300)


@given(SPEEDUPS | ANY_FLOATS)
def test_every_finite_value_is_counted_once(values: list[float]) -> None:
    bins = histogram(values)

    assert bins.total == sum(math.isfinite(v) for v in values)
    assert len(bins.edges) == len(bins.counts) + 1 or not bins.counts
    assert len(bins.counts) <= HISTOGRAM_BINS
    assert all(count >= 0 for count in bins.counts)
    assert bins.edges == sorted(bins.edges)
    assert bins.overflow == sum(math.isfinite(v) and v > bins.edges[-1] for v in values)


@given(SPEEDUPS | ANY_FLOATS)
def test_values_fall_in_their_bin_and_the_tail_in_the_last(values: list[float]) -> None:
    bins = histogram(values)
    finite = [v for v in values if math.isfinite(v)]
    if not finite or bins.edges[0] == bins.edges[-1]:
        return
    assert min(finite) == bins.edges[0]
    assert bins.overflow == sum(v > bins.edges[-1] for v in finite)
    inside = [v for v in finite if v <= bins.edges[-1]]
    width = bins.edges[-1] / len(bins.counts) - bins.edges[0] / len(bins.counts)
    expected = [0] * len(bins.counts)
    for v in inside:
        place = (v - bins.edges[0]) / width
        expected[int(place) if place < len(bins.counts) else -1] += 1
    expected[-1] += bins.overflow
    assert expected == bins.counts


def test_one_outlier_does_not_flatten_the_rest() -> None:
    bins = histogram([1.0 + i / 1000 for i in range(999)] + [1000.0])

    assert bins.edges[-1] < 2  # the 99th percentile, not the outlier
    assert 1 <= bins.overflow <= 10 and bins.counts[-1] >= bins.overflow  # the top 1%, the outlier among them


def test_an_outlier_above_equal_values_is_counted_as_above() -> None:
    """149 operators at 2x and one at 10x: the one bin says it also holds what lies above 2x."""
    bins = histogram([2.0] * 149 + [10.0])

    assert bins.edges == [2.0, 2.0] and bins.counts == [150] and bins.overflow == 1


def test_empty_and_equal_values() -> None:
    assert histogram([]).counts == []
    assert histogram([math.nan]).counts == []
    equal = histogram([2.0, 2.0, 2.0])
    assert equal.counts == [3] and equal.edges == [2.0, 2.0]
