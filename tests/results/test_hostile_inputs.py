"""Hostile result files (tests/data/hostile/) give a result, warnings, or one exit-4 line naming the file.

The fixtures are not named aoe_result_*.json, so that a directory search over tests/data does not
pick them up; they are always given by path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aoe_runner.errors import ExitCode, InputError
from aoe_runner.report.api import summarize_paths
from aoe_runner.results.loader import load_result_file
from aoe_runner.results.normalize import normalize
from aoe_runner.results.raw import decode
from aoe_runner.results.validation import validate_file
from tests.conftest import DATA, SAMPLES
from tests.report.oracle import summarize

HOSTILE = DATA / "hostile"
HOSTILE_FILES = sorted(HOSTILE.glob("*.json"))
CANN60 = SAMPLES / "cann60" / "aoe_result_opat_20220815_093012345_23001.json"
TOO_DEEP = "nested too deeply to read (AOE result files nest about 8 levels)"


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error: ")]


@pytest.mark.parametrize("output_format", ["table", "json", "csv", "markdown"])
@pytest.mark.parametrize("path", HOSTILE_FILES, ids=lambda p: p.stem)
def test_report_gives_a_result_or_one_line_naming_the_file(cli, path: Path, output_format: str) -> None:  # type: ignore[no-untyped-def]
    result = cli("report", "--format", output_format, str(path), str(CANN60))
    assert result.code in (ExitCode.OK, ExitCode.BAD_INPUT)
    assert _errors(result.err) == ([f"error: {path}: {TOO_DEEP}"] if path.stem == "deep_nesting" else [])
    assert "resnet_model/dense/MatMul" in result.out  # the other file is still reported


@pytest.mark.parametrize("path", HOSTILE_FILES, ids=lambda p: p.stem)
def test_validate_gives_findings_or_one_line_naming_the_file(cli, path: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli("validate", str(path))
    assert result.code in (ExitCode.OK, ExitCode.FINDING, ExitCode.BAD_INPUT)
    assert len(_errors(result.err)) == (result.code == ExitCode.BAD_INPUT)


@pytest.mark.parametrize("workers", [1, 2])
def test_one_bad_file_does_not_empty_the_report(workers: int) -> None:
    loaded = summarize_paths([*map(str, HOSTILE_FILES), str(SAMPLES)], workers=workers)
    assert loaded.files_loaded == len(HOSTILE_FILES) - 1 + 6
    assert [(Path(e.where).name, e.reason) for e in loaded.errors] == [("deep_nesting.json", TOO_DEEP)]


def test_bytes_that_are_not_utf8_are_read_as_replacement_characters_with_a_warning(cli) -> None:  # type: ignore[no-untyped-def]
    path = HOSTILE / "gbk_tuning_name.json"
    data = path.read_bytes()
    first_bad = data.index(b"resnet50_") + len(b"resnet50_")
    result = cli("report", "--format", "json", str(path))
    assert result.code == ExitCode.OK
    assert f"not valid UTF-8 at byte {first_bad} (" in result.err
    (point,) = json.loads(result.out)["model_times"]
    assert point["tuning_name"].startswith("resnet50_\ufffd")
    names = [r.basic.tuning_name for r in load_result_file(path).reports if r.basic]
    assert names[1] == "caf\ufffd"


def test_validate_names_bytes_that_are_not_utf8_as_a_finding(cli) -> None:  # type: ignore[no-untyped-def]
    path = HOSTILE / "gbk_tuning_name.json"
    result = cli("validate", str(path))
    assert result.code == ExitCode.FINDING
    assert f"{path}: $: not valid UTF-8 at byte " in result.out


def test_nesting_too_deep_to_decode_is_one_error_in_report_and_validate(cli) -> None:  # type: ignore[no-untyped-def]
    path = HOSTILE / "deep_nesting.json"
    for argv in (["report", str(path)], ["validate", str(path)]):
        result = cli(*argv)
        assert result.code == ExitCode.BAD_INPUT
        assert _errors(result.err) == [f"error: {path}: {TOO_DEEP}"]


def _nested(depth: int, where: str) -> bytes:
    deep = "[" * depth + "]" * depth
    record = f'{{"op_name": "a", "op_type": {deep}, "tune_performance": {{"Format": {{"performance_before_tune(us)": 2,'
    record += f' "performance_after_tune(us)": 1, "performance_improvement": {deep}}}}}}}'
    sections = {
        "operator": f'{{"OPAT": {{"repo_modified_operators": [{record}]}}}}',
        "status": f'{{"OPAT": {{"opat_tuning_result": {deep}, "tuning_failed_operators": [{deep}]}}}}',
        "name": f'{{"basic": {{"tuning_name": {deep}}}}}',
        "subgraph": f'{{"SGAT": {{"repo_modified_subgraphs": {{"add_repo_subgraphs": [{deep}, {{"repo_key": {deep}}}]}}}}}}',
    }
    return f'{{"report_1": [{sections[where]}]}}'.encode()


@pytest.mark.parametrize("where", ["operator", "status", "name", "subgraph"])
def test_values_nested_just_shallow_enough_to_decode_never_crash_the_normaliser(where: str) -> None:
    """Whatever depth decodes, the normaliser only ever quotes a bounded repr of a value it cannot use."""
    for depth in range(850, 1001, 2):
        try:
            result_file = normalize(decode(_nested(depth, where), "f"), "f", "f")
        except InputError as error:
            assert error.reason == TOO_DEEP
            continue
        assert all(len(warning) < 1000 for warning in result_file.warnings)


def test_integers_too_large_for_a_float_or_for_int_are_skipped_with_a_warning() -> None:
    result_file = load_result_file(HOSTILE / "huge_numbers.json")
    (report,) = result_file.reports
    assert report.thread_id is None and report.timestamp is not None  # a 5,000-digit thread id is no thread id
    assert report.basic is not None and report.basic.tuning_time_s is None
    assert report.opat is not None and [op.name for op in report.opat.operators] == ["fine"]
    assert report.opat.repo_summary is not None and report.opat.repo_summary.total is None
    assert any("2 of 3 operator records skipped (no name or no usable times) (first: too_big)" in w for w in result_file.warnings)


def test_a_5000_digit_integer_in_a_cut_off_file_takes_the_stdlib_path_without_error() -> None:
    data = (HOSTILE / "huge_numbers.json").read_bytes()
    result_file = normalize(decode(data[: data.rindex(b"}")], "f"), "f", "f")  # the report is whole, the file is not
    (report,) = result_file.reports
    assert result_file.partial and report.opat is not None and [op.name for op in report.opat.operators] == ["fine"]


def test_a_lone_surrogate_is_carried_through_with_a_warning_and_validate_reports_it(cli) -> None:  # type: ignore[no-untyped-def]
    path = HOSTILE / "lone_surrogate_op_name.json"
    result_file = load_result_file(path)
    (report,) = result_file.reports
    assert report.opat is not None
    assert [(op.name, op.op_types) for op in report.opat.operators] == [
        ("conv\ud800", ("Conv2D\udc00",)),
        ("matmul", ("MatMulV2",)),
    ]
    assert result_file.warnings == [
        "2 string(s) hold a lone surrogate (a \\ud800-\\udfff escape without its pair), which is not valid Unicode;"
        ' kept as written (first: "conv\\ud800")'
    ]
    result = cli("validate", str(path))
    assert result.code == ExitCode.FINDING
    operator = f"{path}: $.report_20260401090000000_7[1].OPAT.repo_modified_operators[0]"
    assert result.out.splitlines() == [
        f'{operator}.op_name: lone surrogate \\ud800 in "conv\\ud800": not valid Unicode',
        f'{operator}.op_type: lone surrogate \\udc00 in "Conv2D\\udc00": not valid Unicode',
    ]


def test_zero_and_negative_times_are_left_out_of_every_saving_with_a_warning() -> None:
    result_file = load_result_file(HOSTILE / "non_positive_times.json")
    label = "report_20260401090000000_9 (#1)"
    assert result_file.warnings == [
        f"{label} OPAT: 4 of 5 operator records skipped (a time is zero, negative, below 1e-06 or from 1e+300) (first: zero_after: before 10, after 0)",
        f"{label} SGAT: model times left out, a time is zero, negative, below 1e-06 or from 1e+300 (before 5 ms, after -1 ms)",
        f"{label} SGAT: 1 of 2 subgraph records skipped (a time is zero, negative, below 1e-06 or from 1e+300) (first: 1: before 4, after 0)",
    ]
    summary = summarize([result_file])
    assert [e.name for e in summary.operators] == ["good"] and [e.repo_key for e in summary.subgraphs] == ["2"]
    assert summary.totals.operator_time_saved_us == 2.0 and summary.totals.subgraph_time_saved_ms == 2.0
    assert summary.model_times == []


def test_counts_too_large_for_their_sum_to_be_a_float_are_not_counts(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    summaries = [{"repo_hit_num": 1.7e308, "total_num": 1}, {"repo_hit_num": 1.7e308, "repo_add_num": 2**53}]
    path = tmp_path / "aoe_result_opat_20260101000000000_1.json"
    path.write_text(
        json.dumps({f"report_2026010100000000{i}_{i}": [{"OPAT": {"repo_summary": s}}] for i, s in enumerate(summaries)})
    )
    result = cli("report", "--format", "json", str(path))
    assert result.code == ExitCode.OK
    totals = json.loads(result.out)["totals"]["opat_repo"]
    assert (totals["hit"], totals["total"], totals["add"]) == (0, 1, 2**53)


def test_validate_never_crashes_on_values_nested_just_shallow_enough_to_decode(tmp_path: Path) -> None:
    path = tmp_path / "aoe_result_opat_1.json"
    for depth in range(1000, 849, -4):
        path.write_bytes(_nested(depth, "name"))
        try:
            problems = validate_file(path)
        except InputError as error:
            assert error.reason == TOO_DEEP
            continue
        assert problems and all(len(problem.message) <= 303 for problem in problems)
