"""validate's compiled check (jsonschema-rs) and jsonschema agree on which documents are valid: a document the
compiled one passes is never one jsonschema would fault (validate would then say nothing). Checked on every JSON
file of the tests and samples, and on random edits of a real result file."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from aoe_runner.results.text import loads
from aoe_runner.results.validation import _valid_by_the_compiled_validator, raw_schema
from tests.conftest import ROOT, SAMPLES

BASE = loads((SAMPLES / "training_opat" / "aoe_result_opat_20260310142233517_41237.json").read_text(encoding="utf-8"))
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _python_valid(document: Any) -> bool:
    return next(Draft202012Validator(raw_schema()).iter_errors(document), None) is None


def _paths(node: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [here]
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        found += _paths(child, (*here, key))
    return found


def test_every_json_file_of_the_tests_gets_the_same_verdict() -> None:
    checked = 0
    for path in [*(ROOT / "tests" / "data").rglob("*.json"), *SAMPLES.rglob("*.json")]:
        try:
            document = loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            continue
        assert _valid_by_the_compiled_validator(document) == _python_valid(document), path
        checked += 1
    assert checked > 10


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_edits_of_a_result_file_get_the_same_verdict(data: st.DataObject) -> None:
    document = copy.deepcopy(BASE)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [path for path in _paths(document) if path]
        where = data.draw(st.sampled_from(paths))
        parent = document
        for key in where[:-1]:
            parent = parent[key]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[where[-1]]
        else:
            parent[where[-1]] = data.draw(VALUES)
    compiled = _valid_by_the_compiled_validator(document)
    assert compiled == _python_valid(document), json.dumps(document, default=str)[:2000]
