"""The plain-file fast path (no normaliser, no pydantic) reads every report as the normaliser does, and takes only
files the normaliser would take as they are: whatever the report-level values, both give the same facts, records
and warnings."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aoe_runner.results import parse as parse_module
from aoe_runner.results.loader import load_result_file
from aoe_runner.results.parse import parse_result_file
from aoe_runner.results.parsed import ParsedFile, from_result_file

RECORD = {
    "op_name": "net/layer_1/MatMul",
    "op_type": "MatMulV2",
    "tune_performance": {
        "Format": {
            "performance_before_tune(us)": 20.0,
            "performance_after_tune(us)": 10.0,
            "performance_improvement": "100.00%",
            "update_mode": "add",
        }
    },
}
ODD_VALUES = st.sampled_from([None, 3, -1, 0, 2.5, "7", "x", True, [], {}, [1], "12.5%", "1e400"])
STATUS = st.one_of(st.sampled_from(["tuning successful", "tuning failed", "incomplete", "busy", "SUCCESS"]), ODD_VALUES)
COUNT = st.one_of(st.integers(0, 30), ODD_VALUES)


@st.composite
def opat_sections(draw: st.DrawFn) -> dict[str, Any]:
    section: dict[str, Any] = {"repo_modified_operators": draw(st.sampled_from([[RECORD], [], None]))}
    if draw(st.booleans()):
        section[draw(st.sampled_from(["opat_tuning_result", "opat_tune_result"]))] = draw(STATUS)
    if draw(st.booleans()):
        section[draw(st.sampled_from(["tuning_failed_operators", "tune_failed_operators"]))] = draw(
            st.one_of(st.lists(st.sampled_from(["a/op", "b/op"]), max_size=2), ODD_VALUES)
        )
    if draw(st.booleans()):
        add, hit, reserved, unsatisfied, update = (draw(st.integers(0, 9)) for _ in range(5))
        counts: dict[str, Any] = {
            "repo_add_num": add,
            "repo_hit_num": reserved + update if draw(st.booleans()) else hit,
            "repo_reserved_num": reserved,
            "repo_unsatisfied_num": unsatisfied,
            "repo_update_num": update,
        }
        counts["total_num"] = counts["repo_add_num"] + counts["repo_hit_num"] + unsatisfied + draw(st.sampled_from([0, 0, 1]))
        if draw(st.booleans()):
            counts[draw(st.sampled_from(sorted(counts)))] = draw(COUNT)
        section["repo_summary"] = draw(st.one_of(st.just(counts), ODD_VALUES))
    if draw(st.booleans()):
        section["model_baseline_performance(ms)"] = draw(st.one_of(st.sampled_from([10.0, 8, 0]), ODD_VALUES))
        section["model_result_performance(ms)"] = draw(st.one_of(st.sampled_from([5.0, 4]), ODD_VALUES))
        if draw(st.booleans()):
            section["model_performance_improvement"] = draw(st.one_of(st.sampled_from(["100%", "50.00%", "3%"]), ODD_VALUES))
    return section


@st.composite
def reports(draw: st.DrawFn) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if draw(st.booleans()):
        basic = {"tuning_name": draw(st.one_of(st.just("网络"), ODD_VALUES)), "tuning_time(s)": draw(COUNT)}
        parts.append({"basic": draw(st.one_of(st.just(basic), ODD_VALUES))})
    for _ in range(draw(st.integers(0, 2))):
        parts.append({"OPAT": draw(st.one_of(opat_sections(), st.none()))})
    if draw(st.integers(0, 5)) == 0:
        parts.append({"SGAT": {"repo_modified_subgraphs": []}})
    return parts


KEYS = st.one_of(
    st.sampled_from(["report_20260310120000123_41", "report_20261399120000_1", "report_x", "report_20260310_120000_9"]),
    st.builds(lambda n: f"report_2026031{n % 10}1200001{n}_{n}", st.integers(0, 99)),
)
NAMES = st.sampled_from(["aoe_result_opat_20260310142233517_41237.json", "aoe_result_opat_x.json", "result.json"])


def _wire(parsed: ParsedFile) -> object:
    return ParsedFile.from_bytes(parsed.to_bytes()).to_bytes() if parsed.cacheable else parsed.warnings


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=st.dictionaries(KEYS, reports(), max_size=3), name=NAMES)
def test_the_fast_path_reads_reports_as_the_normaliser_does(tmp_path: Path, document: dict[str, Any], name: str) -> None:
    path = tmp_path / name
    data = json.dumps(document, ensure_ascii=False).encode()
    path.write_bytes(data)
    mtime = os.stat(path).st_mtime
    try:
        slow = from_result_file(load_result_file(path))
    except Exception as error:  # noqa: BLE001 (an InputError: the fast path must refuse the file the same way)
        try:
            parse_result_file(str(path), data, mtime)
        except type(error) as same:
            assert str(same) == str(error)
            return
        raise AssertionError(f"the fast path took a file the normaliser refuses: {error}") from None
    assert _wire(parse_result_file(str(path), data, mtime)) == _wire(slow)


def test_a_plain_file_is_read_without_the_normaliser(tmp_path: Path, monkeypatch: Any) -> None:
    """The fast path is taken: a plain file never reaches the loader (and so never loads pydantic)."""
    document = {
        "report_20260310120000123_41": [
            {"basic": {"tuning_name": "net", "tuning_time(s)": 12}},
            {"OPAT": {"opat_tuning_result": "tuning successful", "repo_modified_operators": [RECORD]}},
        ]
    }
    path = tmp_path / "aoe_result_opat_20260310142233517_41237.json"
    data = json.dumps(document).encode()
    path.write_bytes(data)

    def refuse(*args: object) -> None:
        raise AssertionError("the normaliser was used")

    from aoe_runner.results import loader

    monkeypatch.setattr(loader, "parse_typed", refuse)
    monkeypatch.setattr(loader, "parse_normalized", refuse)
    parsed = parse_module.parse_result_file(str(path), data, 0.0)
    parsed.settle()  # the records too, decoded (merging decodes them so, a batch at a time)
    assert parsed.typed and parsed.reports[0].status == "successful" and parsed.reports[0].tuning_time == 12.0
