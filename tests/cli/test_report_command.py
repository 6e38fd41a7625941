from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import DATA, ROOT, SAMPLES


def test_table_report_on_the_samples(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("report", str(SAMPLES))
    assert result.code == 0
    assert "16 operators (13 added, 3 updated) and 2 subgraphs (1 added, 1 updated)" in result.out
    assert "Conflicts (latest result slower than an earlier one from another file): 1" in result.out
    assert "resnet50_子图调优" in result.out
    assert result.err.count("warning: ") == 2
    assert "report_20260312084512331_61241 was cut off mid-write" in result.err


def test_json_output_matches_its_generated_schema(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("report", str(SAMPLES), "--format", "json")
    document = json.loads(result.out)
    schema = json.loads((ROOT / "schemas" / "bank-summary.schema.json").read_text())
    jsonschema.validate(document, schema)
    assert document["totals"]["operators"] == 16 and len(document["operators"]) == 16


def test_top_limits_every_format(cli) -> None:  # type: ignore[no-untyped-def]
    assert len(json.loads(cli("report", str(SAMPLES), "-f", "json", "--top", "3").out)["operators"]) == 3
    rows = list(csv.DictReader(io.StringIO(cli("report", str(SAMPLES), "-f", "csv", "--top", "2").out)))
    assert [r["kind"] for r in rows] == ["operator", "operator", "subgraph", "subgraph"]
    assert "Operators by time saved (top 5 of 16; --top N for more)" in cli("report", str(SAMPLES), "--top", "5").out


def test_csv_rows_carry_provenance(cli) -> None:  # type: ignore[no-untyped-def]
    rows = list(csv.DictReader(io.StringIO(cli("report", str(SAMPLES / "retune"), "-f", "csv").out)))
    assert rows[0]["name"] == "bert/encoder/layer_10/attention/self/Softmax_OPAT_0"
    assert rows[0]["report_key"] == "report_20260317091500120_52010"
    assert float(rows[0]["time_saved"]) == pytest.approx(58.781 - 25.113)


def test_markdown_is_ready_for_a_pull_request(cli) -> None:  # type: ignore[no-untyped-def]
    out = cli("report", str(SAMPLES), "--format", "markdown").out
    assert "### Operators by time saved" in out
    assert "| operator " in out and "|---" in out.replace(" ", "")
    long_name = "bert/encoder/layer_8/attention/output/dense/MatMulbert/encoder/layer_8/attention/output/add"
    assert long_name in out  # names are not shortened in markdown


def test_output_file_is_written_only_when_there_is_a_result(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "summary.json"
    assert cli("report", str(SAMPLES), "-f", "json", "-o", str(target)).code == 0
    assert json.loads(target.read_text())["totals"]["files"] == 6
    missing = tmp_path / "nothing.json"
    result = cli("report", str(tmp_path / "no-such-dir"), "-o", str(missing))
    assert result.code == 4 and not missing.exists()
    assert result.err == f"error: {tmp_path / 'no-such-dir'}: no such file or directory\n"


def test_bad_inputs_are_reported_and_the_rest_still_summarised(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("report", str(DATA / "bad"), str(SAMPLES / "cann60"))
    assert result.code == 4
    assert "3 operators" in result.out
    errors = [line for line in result.err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 4 and all("aoe_result_opat_" in line for line in errors)
    assert "Traceback" not in result.err


def test_diff_and_the_regression_gate(cli) -> None:  # type: ignore[no-untyped-def]
    old, new = str(SAMPLES / "training_opat"), str(SAMPLES / "retune")
    plain = cli("report", "--diff", old, new)
    assert plain.code == 0
    assert "1 added, 6 not in new results, 1 improved, 1 regressed, 0 unchanged (threshold 2%)." in plain.out
    gated = cli("report", "--diff", old, new, "--fail-on-regression")
    assert gated.code == 1 and "1 entry regressed by more than 2%" in gated.err
    assert cli("report", "--diff", old, new, "--fail-on-regression", "--threshold", "15%").code == 0
    diff = json.loads(cli("report", "--diff", old, new, "-f", "json").out)
    jsonschema.validate(diff, json.loads((ROOT / "schemas" / "bank-diff.schema.json").read_text()))
    assert diff["counts"]["regressed"] == 1


def test_diff_with_an_unreadable_side_is_bad_input_even_with_regressions(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli("report", "--diff", str(tmp_path / "missing"), str(SAMPLES), "--fail-on-regression")
    assert result.code == 4 and result.out == ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report"], "report needs a PATH (a result file, a directory or a glob pattern), --run RUN or --samples"),
        (["report", "--diff", "a"], "--diff needs two paths or runs, OLD and NEW, or none for the two newest runs (got 1)"),
        (["report", "x", "--allow-env-drift"], "--allow-env-drift and --script need --diff"),
        (["report", "x", "--script", "train.py"], "--allow-env-drift and --script need --diff"),
        (["report", "--diff", "a", "b", "--script", "train.py"], "--script picks the two runs to compare"),
        (
            ["report", "x", "--fail-on-regression"],
            "--threshold, --fail-on-regression, --allow-env-drift and --script need --diff",
        ),
        (["report", "x", "--threshold", "2%"], "--threshold, --fail-on-regression, --allow-env-drift and --script need --diff"),
        (["report", "x", "--min-gain", "lots"], "--min-gain: 'lots' is not a percentage"),
        (["report", "x", "--format", "xml"], "'xml' is not one of"),
        (["report", "x", "--top", "0"], "--top"),
        (["report", "--bogus"], "No such option: --bogus"),
        (["frobnicate"], "No such command 'frobnicate'"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(cli, argv: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    result = cli(*argv)
    assert result.code == 2
    assert result.err.startswith("error: ") and result.err.count("\n") == 1
    assert message in result.err


def test_help_and_version(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("--help")
    assert result.code == 0 and "report" in result.out and "validate" in result.out
    assert cli("--version").out.startswith("aoe-runner ")
