"""render/numbers reads a float's digits from its shortest text (repr) without the decimal module."""

from __future__ import annotations

import math
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from aoe_runner.render.numbers import decimals, difference, ratio, significant


def _decimal_places(value: float) -> int:
    exponent = Decimal(repr(value)).normalize().as_tuple().exponent
    return max(-exponent, 0) if isinstance(exponent, int) else 0


def _decimal_digits(value: float) -> int:
    return max(len(Decimal(repr(value)).normalize().as_tuple().digits), 1)


@settings(max_examples=3000)
@given(st.floats())
def test_digits_agree_with_the_decimal_module(value: float) -> None:
    assert decimals(value) == _decimal_places(value)
    assert significant(value) == _decimal_digits(value)


def test_examples() -> None:
    assert [decimals(v) for v in (310.4, 251.77, 142.0, 1200.0, 1.5e-07, 0.0)] == [1, 2, 0, 0, 8, 0]
    assert [significant(v) for v in (310.4, 0.05, 142.0, 1200.0, 5e-324, math.inf)] == [4, 1, 3, 2, 1, 1]
    assert difference(58.63 - 0.01, 58.63, 0.01) == 58.62
    assert ratio(310.4 / 251.77, 310.4, 251.77) == 1.233
