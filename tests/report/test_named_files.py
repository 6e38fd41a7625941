"""A result file named on the command line that yields no report is bad input (exit 4) unless --allow-empty.

A directory search or a glob keeps skipping such files, with a warning when they are partial: AOE writes its
files while it tunes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aoe_runner.errors import ExitCode
from aoe_runner.report.api import summarize_paths
from tests.conftest import SAMPLES

GOOD = SAMPLES / "cann60" / "aoe_result_opat_20220815_093012345_23001.json"
NO_REPORT = {
    "zero bytes": (b"", "it is empty (0 bytes)"),
    "whitespace": (b" \n\t\r\n  ", "it holds only whitespace"),
    "empty object": (b"{}\n", "it is an empty JSON object"),
    "cut-off JSON that is no result file": (b'{"foo": [1, 2, {"bar"', "it ends before its first report is complete"),
    "AOE file cut off in its first report": (b'{"report_20260101000000000_1": [{"basic": {"tuning_na', "it ends before"),
    "legacy file cut off in its first entry": (b'{"[Adam/mul_1]": {"result_data": {"after_tu', "it ends before"),
}


@pytest.fixture(params=sorted(NO_REPORT))
def no_report(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    data, why = NO_REPORT[request.param]
    path = tmp_path / "aoe_result_opat_20260101000000000_1.json"
    path.write_bytes(data)
    return path, why


def test_a_named_file_without_a_report_is_bad_input(cli, no_report: tuple[Path, str]) -> None:  # type: ignore[no-untyped-def]
    path, why = no_report
    result = cli("report", str(path))
    assert result.code == ExitCode.BAD_INPUT
    assert result.out == ""
    (line,) = result.err.splitlines()  # one line, and no partial-file warning beside it
    assert line.startswith(f"error: {path}: no report in this file: {why}")
    assert line.endswith("--allow-empty accepts such a file")


@pytest.mark.parametrize("output_format", ["table", "json", "csv", "markdown"])
def test_allow_empty_accepts_it(cli, no_report: tuple[Path, str], output_format: str) -> None:  # type: ignore[no-untyped-def]
    path, _ = no_report
    result = cli("report", "--allow-empty", "-f", output_format, str(path))
    assert result.code == ExitCode.OK
    assert "error:" not in result.err


def test_the_other_files_are_still_reported_without_the_empty_one(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    result = cli("report", "-f", "json", str(empty), str(GOOD))
    assert result.code == ExitCode.BAD_INPUT
    summary = json.loads(result.out)
    assert [info["path"] for info in summary["files"]] == [str(GOOD)]
    assert (summary["totals"]["files"], summary["totals"]["partial_files"]) == (1, 0)
    assert result.err == f"error: {empty}: no report in this file: it is empty (0 bytes); --allow-empty accepts such a file\n"


def test_the_same_file_found_by_a_search_is_skipped_with_a_warning(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    live = tmp_path / "aoe_data" / "aoe_result_opat_20260101000000000_1.json"
    live.parent.mkdir()
    live.write_bytes(b'{"report_20260101000000000_1": [{"basic"')  # AOE has only begun to write it
    (tmp_path / "aoe_result_opat_20260101000000000_2.json").write_bytes(b"")
    shutil.copy(GOOD, tmp_path)
    assert cli("report", str(live), str(GOOD)).code == ExitCode.BAD_INPUT  # named: an error
    for search in (str(tmp_path), str(tmp_path / "**" / "aoe_result_*.json")):  # found: a directory search, a glob
        result = cli("report", search)
        assert result.code == ExitCode.OK
        assert "error:" not in result.err and f"warning: {live}: partial file" in result.err
        assert "resnet_model/dense/MatMul" in result.out


def test_a_diff_with_an_empty_named_side_is_bad_input(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    empty = tmp_path / "new.json"
    empty.write_text("{}")
    result = cli("report", "--diff", str(GOOD), str(empty))
    assert result.code == ExitCode.BAD_INPUT and f"error: {empty}: no report in this file" in result.err
    assert cli("report", "--diff", "--allow-empty", str(GOOD), str(empty)).code == ExitCode.OK


def test_the_library_reports_it_as_an_input_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"  ")
    loaded = summarize_paths([str(empty), str(GOOD)])
    assert [(error.where, error.exit_code) for error in loaded.errors] == [(str(empty), ExitCode.BAD_INPUT)]
    assert loaded.files_loaded == 1 and loaded.summary.totals.files == 1
    assert summarize_paths([str(empty)], allow_empty=True).errors == []
