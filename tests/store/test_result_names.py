"""run_results takes every name a result file can hold: PostgreSQL text refuses NUL and a lone surrogate (tune then
exited 3 and the run stayed 'running' in the store), its index a name over 2,704 bytes, and its primary key two
operators whose labels read the same (op types ["A", "B"] and "A+B")."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from aoe_runner.store.pg_index import MAX_NAME_CHARACTERS, result_rows, stored_name


@given(st.text(min_size=1, max_size=3000))
def test_every_name_is_stored_as_utf8_text_without_nul_that_an_index_row_holds(name: str) -> None:
    stored = stored_name(name)

    assert "\x00" not in stored and len(stored.encode("utf-8")) <= 2704
    if len(name) <= MAX_NAME_CHARACTERS // 4 and "\x00" not in name and "\\" not in name:
        assert stored == name.encode("utf-8", "backslashreplace").decode()  # short, plain names as they are


def test_two_long_names_stay_apart_and_two_equal_labels_are_one_row() -> None:
    long = "layer/" * 200
    assert stored_name(long + "a") != stored_name(long + "b")

    results = [SimpleNamespace(kind="operator", name="A+B", tuned_us=t, baseline_us=2.0, speedup=2.0 / t) for t in (1.0, 4.0)]
    assert result_rows("run", results) == [("run", "operator", "A+B", 1.0, 2.0, 2.0)]
