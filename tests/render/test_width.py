"""render/width.text_width measures what it knows without wcwidth: it must say what wcwidth says."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wcwidth import wcswidth, wcwidth

from aoe_runner.render import width

RANGES = [(0x20, 0x7E), (0xA0, 0xFF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xFF01, 0xFF60)]


@pytest.mark.parametrize(("first", "last"), RANGES)
def test_every_code_point_the_fast_path_knows_has_wcwidths_width(first: int, last: int) -> None:
    for point in range(first, last + 1):
        assert width._known_width(chr(point)) is not None, hex(point)
        assert width.text_width(chr(point)) == wcwidth(chr(point)), hex(point)


@given(st.text(max_size=40))
def test_any_text_measures_as_wcwidth_measures_it(text: str) -> None:
    measured = wcswidth(text)
    assert width.text_width(text) == (measured if measured >= 0 else len(text))


def test_the_symbols_aoe_runner_writes_are_one_column() -> None:
    assert all(width.text_width(symbol) == wcwidth(symbol) == 1 for symbol in "µΔμ…→≤≥×")
