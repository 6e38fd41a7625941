from __future__ import annotations

import json

import pytest

from aoe_runner.report.api import diff_paths
from aoe_runner.report.diff import DEFAULT_THRESHOLD_PCT, ChangeKind, classify
from tests.conftest import SAMPLES


def test_diff_of_a_retune_against_the_first_run() -> None:
    compared = diff_paths([str(SAMPLES / "training_opat")], [str(SAMPLES / "retune")], DEFAULT_THRESHOLD_PCT)
    diff, old, new = compared.diff, compared.old, compared.new
    assert old.errors == [] and new.errors == []
    by_label = {c.label: c for c in diff.changes}
    softmax = by_label["bert/encoder/layer_10/attention/self/Softmax_OPAT_0 [SoftmaxV2] (Format)"]
    assert (softmax.change, softmax.old_after, softmax.new_after) == (ChangeKind.IMPROVED, 26.876, 25.113)
    assert softmax.after_change_pct == pytest.approx((25.113 - 26.876) / 26.876 * 100)
    matmul = by_label["bert/encoder/layer_3/intermediate/dense/MatMul [MatMulV2] (Schedule)"]
    assert matmul.change is ChangeKind.REGRESSED
    assert by_label["bert/encoder/layer_5/output/dense/MatMul [MatMulV2] (Schedule)"].change is ChangeKind.ADDED
    assert by_label["bert/encoder/layer_0/attention/self/MatMul [BatchMatMulV2] (Schedule)"].change is ChangeKind.NOT_IN_NEW
    assert diff.counts == {
        ChangeKind.ADDED: 1,
        ChangeKind.NOT_IN_NEW: 6,
        ChangeKind.IMPROVED: 1,
        ChangeKind.REGRESSED: 1,
        ChangeKind.UNCHANGED: 0,
    }
    assert diff.changes[0].change is ChangeKind.REGRESSED  # regressions first
    assert [c.label for c in diff.regressions] == [matmul.label]


def test_a_big_threshold_turns_changes_into_unchanged() -> None:
    diff = diff_paths([str(SAMPLES / "training_opat")], [str(SAMPLES / "retune")], threshold_pct=15).diff
    assert diff.counts[ChangeKind.REGRESSED] == 0 and diff.counts[ChangeKind.UNCHANGED] == 2


def test_model_level_deltas_match_by_section_and_tuning_name() -> None:
    diff = diff_paths([str(SAMPLES / "training_sgat")], [str(SAMPLES)], DEFAULT_THRESHOLD_PCT).diff
    (delta, *others) = [d for d in diff.model_deltas if d.section == "SGAT"]
    assert others == [] and delta.change is ChangeKind.UNCHANGED and delta.change_pct == 0
    assert [d.change for d in diff.model_deltas if d.section == "OPAT"] == [ChangeKind.ADDED]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (100.0, 102.0, ChangeKind.UNCHANGED),  # exactly at the threshold is not a change
        (100.0, 102.01, ChangeKind.REGRESSED),
        (100.0, 97.99, ChangeKind.IMPROVED),
        (None, 1.0, ChangeKind.ADDED),
        (1.0, None, ChangeKind.NOT_IN_NEW),
    ],
)
def test_classify_boundaries(old: float | None, new: float | None, expected: ChangeKind) -> None:
    assert classify(old, new, 2.0)[0] is expected


@pytest.mark.parametrize("output_format", ["table", "markdown", "csv", "json"])
def test_an_entry_only_old_results_hold_is_not_called_removed(cli, output_format: str) -> None:  # type: ignore[no-untyped-def]
    """AOE never removes a bank entry, and the diff compares results: no format says "removed" or "bank diff"."""
    result = cli("report", "--diff", "-f", output_format, str(SAMPLES / "training_opat"), str(SAMPLES / "retune"))
    assert result.code == 0
    assert "removed" not in result.out.lower() and "bank diff" not in result.out.lower()
    assert result.out.count("not_in_new") >= 6  # the same word in every format (conventions.md#one-vocabulary)
    if output_format in ("table", "markdown"):
        assert "6 not in new results" in result.out  # and in the sentence that counts them
    if output_format in ("table", "markdown"):
        assert "Results diff" in result.out.splitlines()[0]
    if output_format == "json":
        document = json.loads(result.out)
        assert document["schema_version"] == 2 and document["counts"]["not_in_new"] == 6


def _one_report(tmp_path: object, name: str, operators: list[tuple[object, float]]) -> str:
    from pathlib import Path

    records = [
        {
            "op_name": "x",
            "op_type": op_type,
            "tune_performance": {"Format": {"performance_before_tune(us)": 100.0, "performance_after_tune(us)": after}},
        }
        for op_type, after in operators
    ]
    report = [
        {"basic": {"tuning_name": "net"}},
        {"OPAT": {"opat_tuning_result": "tuning successful", "repo_modified_operators": records}},
    ]
    folder = Path(str(tmp_path)) / name
    folder.mkdir()
    (folder / "aoe_result_opat_20260301100000000_1.json").write_text(
        json.dumps({"report_20260301100000000_1": [report[0], report[1]]})
    )
    return str(folder)


def test_two_entries_one_label_would_name_are_both_compared(tmp_path: object) -> None:
    """The op type "A+B" and the fused ["A", "B"] are two bank entries that the label `x [A+B] (Format)` names alike:
    the diff matched by label, one hid the other, and a regression of 20% passed --fail-on-regression."""
    old = _one_report(tmp_path, "old", [("A+B", 50.0), (["A", "B"], 70.0)])
    new = _one_report(tmp_path, "new", [("A+B", 60.0), (["A", "B"], 70.0)])
    diff = diff_paths([old], [new], DEFAULT_THRESHOLD_PCT).diff
    assert [(change.label, change.change) for change in diff.changes] == [
        ('x [A+B] (Format) (op types ["A+B"])', ChangeKind.REGRESSED),
        ('x [A+B] (Format) (op types ["A", "B"])', ChangeKind.UNCHANGED),
    ]
