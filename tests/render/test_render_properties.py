"""Hypothesis, through the real CLI: for any name, no text format can be forged and JSON keeps it exactly."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aoe_runner.common.safe_text import csv_cell
from tests.render.hostile import assert_markdown_safe, assert_table_safe, write_result

_HOSTILE_CHARS = (
    "\x00\x07\t\n\r\x1b\x7f\x85\x9b\u2028\u2029\u202a\u202e\u2066\u2069\ud800\udfff|`<>&[]()!\\:=+-@'\" ,.#*_~0123456789"
)
_PLAIN: dict[str, str] = {}
names = st.text(st.one_of(st.sampled_from(_HOSTILE_CHARS), st.characters(codec=None, exclude_categories=())), min_size=1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=names)
def test_any_name_in_every_format(cli, tmp_path: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    def report(path: Path, fmt: str) -> str:
        result = cli("report", str(path), "-f", fmt)
        assert result.code == 0, result.err
        return result.out

    if not _PLAIN:  # the layout with plain names, once: table and markdown show no path
        plain = write_result(tmp_path / "plain", op_name="op", op_type="Add", tuning_name="t", repo_key="1")
        _PLAIN.update({fmt: report(plain, fmt) for fmt in ("table", "markdown")})
    hostile = write_result(tmp_path / "hostile", op_name=name, op_type=name, tuning_name=name, repo_key=name)

    assert_table_safe(report(hostile, "table"), _PLAIN["table"])
    assert_markdown_safe(report(hostile, "markdown"), _PLAIN["markdown"])
    document = json.loads(report(hostile, "json"))
    assert (document["operators"][0]["name"], document["subgraphs"][0]["repo_key"]) == (name, name)
    header, operator, subgraph = csv.reader(io.StringIO(report(hostile, "csv")))
    assert operator[header.index("name")] == subgraph[header.index("name")] == csv_cell(name)
