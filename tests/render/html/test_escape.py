"""Names from result files stay text in every place a page holds them: HTML, plotly labels, JSON in <script>."""

from __future__ import annotations

import html
import json

from hypothesis import given
from hypothesis import strategies as st

from aoe_runner.common.safe_text import visible
from aoe_runner.render.html.escape import cell, label, script_json, text
from tests.render.html.pages import HOSTILE_NAMES

ANY_TEXT = st.text(alphabet=st.characters(codec=None), max_size=60) | st.sampled_from(HOSTILE_NAMES)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_script_json_reads_back_and_cannot_close_its_element(value: object) -> None:
    written = script_json(value)

    assert json.loads(written) == value
    assert not set(written) & {"<", ">", "&", "\u2028", "\u2029"}
    written.encode("utf-8")  # a lone surrogate is an escape, not a character UTF-8 refuses


def test_script_json_turns_what_json_cannot_hold_into_null() -> None:
    assert json.loads(script_json({"speedup": float("inf"), "x": [float("nan"), 1.5]})) == {"speedup": None, "x": [None, 1.5]}


@given(ANY_TEXT)
def test_html_text_is_never_markup(name: str) -> None:
    shown = text(name)

    assert "<" not in shown and ">" not in shown and '"' not in shown
    assert html.unescape(shown) == visible(name)
    shown.encode("utf-8")


@given(ANY_TEXT)
def test_plotly_labels_show_the_name_as_written(name: str) -> None:
    """plotly reads tags and entities in labels: escaped, its text is the name (as every text format shows it)."""
    shown = label(name)

    assert "<" not in shown and ">" not in shown
    assert html.unescape(shown) == visible(name)


def test_hostile_names_in_every_place() -> None:
    for name in HOSTILE_NAMES:
        assert "</script" not in script_json({"name": cell(name)}).lower()
        assert "<script" not in text(name) and "<script" not in label(name)
    assert cell("lone\ud800surrogate") == "lone\\ud800surrogate"
    assert cell(None) is None
