"""Every variant of AOE.md §4, read from the shipped samples and the golden files under tests/data."""

from __future__ import annotations

from datetime import datetime

import pytest

from aoe_runner.errors import InputError
from aoe_runner.results.figures import improvement_disagreement
from aoe_runner.results.loader import load_result_file
from aoe_runner.results.model import TuningStatus, UpdateMode
from tests.conftest import DATA, SAMPLES


def _only(folder: str, root=SAMPLES):  # type: ignore[no-untyped-def]
    (path,) = sorted((root / folder).rglob("*.json"))
    return load_result_file(path)


def test_training_opat_with_several_reports() -> None:
    f = _only("training_opat")
    assert f.layout == "training" and not f.partial and f.warnings == []
    assert f.file_timestamp == datetime(2026, 3, 10, 14, 22, 33, 517000)
    first, second, third = f.reports
    assert first.key == "report_20260310142233517_41240"
    assert first.timestamp == datetime(2026, 3, 10, 14, 22, 33, 517000)
    assert first.thread_id == 41240
    assert first.basic and first.basic.tuning_name == "bert_base_训练调优_graph_0" and first.basic.tuning_time_s == 44
    assert first.opat and first.opat.status is TuningStatus.SUCCESSFUL
    softmax = first.opat.operators[0]
    assert (softmax.op_types, softmax.tuning_mode, softmax.update_mode) == (("SoftmaxV2",), "Format", UpdateMode.ADD)
    assert softmax.before_us == 58.781 and softmax.after_us == 26.876
    assert softmax.improvement_raw == "118.71%"
    assert softmax.speedup == pytest.approx(2.18712, rel=1e-5)
    assert softmax.time_saved_us == pytest.approx(31.905)
    assert first.opat.operators[3].op_types == ("MatMulV2", "FastGelu")
    rs = first.opat.repo_summary
    assert rs and (rs.add, rs.hit, rs.reserved, rs.unsatisfied, rs.update, rs.total) == (5, 10, 10, 1, 0, 16)
    assert second.basic and second.basic.tuning_time_s == 131.5
    assert third.opat and third.opat.status is TuningStatus.FAILED
    assert third.opat.status_raw == "tuning failed"
    assert third.opat.failed_operators == ["res4a_branch1"]


def test_sgat_report_and_its_off_by_one_summary_is_a_warning() -> None:
    f = _only("training_sgat")
    (report,) = f.reports
    assert report.opat is None and report.sgat is not None
    model = report.sgat.model_times
    assert model and (model.before_ms, model.after_ms, model.improvement_raw) == (5.600486, 3.610442, "55.11%")
    assert model.speedup == pytest.approx(1.55119, rel=1e-5)
    add, update = report.sgat.subgraphs
    assert (add.repo_key, add.update_mode) == ("1024942313106047484", UpdateMode.ADD)
    assert (update.repo_key, update.update_mode, update.after_ms) == ("1024942313106057586", UpdateMode.UPDATE, 2.573203)
    assert f.warnings == [
        "report_20260310160512004_41880 (#1) SGAT: repo_summary does not add up: total 121 != add 1 + hit 1 + unsatisfied 120"
    ]


def test_cann_60_legacy_keys_and_add_update_lists() -> None:
    f = _only("cann60")
    (report,) = f.reports
    assert report.timestamp == datetime(2022, 8, 15, 9, 30, 12, 345000)  # YYYYMMDD_HHMMSSMS form
    assert f.file_timestamp == datetime(2022, 8, 15, 9, 30, 12, 345000)
    assert report.opat and report.opat.status is TuningStatus.SUCCESSFUL and report.opat.status_raw == "tune success"
    modes = [(op.name, op.tuning_mode, op.update_mode) for op in report.opat.operators]
    assert modes == [
        ("resnet_model/conv2d_12/Conv2D", None, UpdateMode.ADD),
        ("resnet_model/batch_normalization_12/FusedBatchNormV3", None, UpdateMode.ADD),
        ("resnet_model/dense/MatMul", None, UpdateMode.UPDATE),
    ]
    assert report.opat.operators[0].before_us == 142.0  # integer times become floats


def test_offline_list_with_model_level_times() -> None:
    f = _only("offline")
    assert f.layout == "offline"
    (report,) = f.reports
    assert report.key is None and report.timestamp is None
    assert report.opat and report.opat.model_times
    assert report.opat.model_times.before_ms == 12.481 and report.opat.model_times.after_ms == 10.902
    assert len(report.opat.operators) == 3


def test_live_truncated_file_recovers_complete_reports() -> None:
    f = _only("live")
    assert f.partial
    assert [r.key for r in f.reports] == ["report_20260312083000999_61240"]
    assert "report_20260312084512331_61241 was cut off mid-write" in f.warnings[0]


def test_bom_crlf_integer_times_and_chinese_names() -> None:
    f = _only("bom_crlf", DATA)
    (report,) = f.reports
    assert report.basic and report.basic.tuning_name == "调优任务名"
    assert report.opat and report.opat.operators[0].speedup == 2.0


def test_identical_report_keys_are_both_kept() -> None:
    f = _only("duplicate_keys", DATA)
    assert [r.key for r in f.reports] == ["report_${timestamp}_${tid}"] * 2
    assert [r.opat.operators[0].name for r in f.reports if r.opat] == ["conv1", "conv2"]
    assert [r.timestamp for r in f.reports] == [None, None]


def test_odd_records_are_kept_or_skipped_with_aggregated_warnings() -> None:
    f = _only("odd_records", DATA)
    (report,) = f.reports
    assert report.opat is not None
    assert report.opat.status is None and report.opat.status_raw == "tuning done?"
    names = [(op.name, op.tuning_mode) for op in report.opat.operators]
    assert names == [("fused_add_relu", "Format"), ("fused_add_relu", "Schedule"), ("reduction_reading", "Impl")]
    label = "report_20260402080000500_9 (#1)"
    assert f.warnings == [
        f"{label}: unknown section(s) ignored: GDAT",
        f"{label} OPAT: unknown tuning result 'tuning done?'",
        f"{label} OPAT: 1 of 4 operator records skipped (no name or no usable times) (first: no_times)",
        f"{label} OPAT: 1 of 4 operator improvement figures disagree with their times (first: fused_add_relu: says 50.00%, times give 11.11%)",
        f"{label} OPAT: repo_summary does not add up: hit 5 != reserved 3 + update 1",
        f"{label} OPAT: repo_summary does not add up: total 9 != add 2 + hit 5 + unsatisfied 1",
    ]


@pytest.mark.parametrize("name", ["object", "number", "garbage", "utf16"])
def test_non_result_files_are_rejected_with_a_reason(name: str) -> None:
    with pytest.raises(InputError) as caught:
        load_result_file(DATA / "bad" / f"aoe_result_opat_{name}.json")
    assert str(DATA / "bad") in caught.value.message
    assert "\n" not in caught.value.message


@pytest.mark.parametrize(
    ("raw", "before", "after", "agrees"),
    [
        ("118.71%", 58.781, 26.876, True),  # documented: before/after - 1
        ("54.28%", 58.781, 26.876, True),  # the prose's reading: time reduced
        ("6.37%", 16.71, 15.71, True),
        ("55.11%", 5.600486, 3.610442, True),  # the SGAT example rounds down
        ("90%", 58.781, 26.876, False),
        ("n/a", 2.0, 1.0, False),
    ],
)
def test_improvement_figure_is_checked_against_its_times(raw: str, before: float, after: float, agrees: bool) -> None:
    assert (improvement_disagreement(raw, before, after) is None) is agrees


@pytest.mark.parametrize("layout", ["training", "offline"])
def test_a_section_given_twice_in_one_report_is_said_and_the_file_is_not_valid(cli, tmp_path, layout: str) -> None:  # type: ignore[no-untyped-def]
    """A report of [basic, OPAT, OPAT]: the first OPAT's operators were dropped without a word and validate said
    valid. Now report warns (the last of each is read, as before) and validate names the report."""
    import json

    def opat(name: str) -> dict[str, object]:
        performance = {
            "performance_before_tune(us)": 10.0,
            "performance_after_tune(us)": 5.0,
            "performance_improvement": "100.00%",
        }
        operator = {"op_name": name, "op_type": "Add", "tune_performance": {"Format": performance}}
        return {"OPAT": {"opat_tuning_result": "tuning successful", "repo_modified_operators": [operator]}}

    parts = [{"basic": {"tuning_name": "n"}}, opat("a"), opat("b")]
    path = tmp_path / "aoe_result_opat_20260301100000000_1.json"
    path.write_text(json.dumps({"report_20260301100000000_1": parts} if layout == "training" else parts))
    result_file = load_result_file(path)
    assert [op.name for op in result_file.reports[0].opat.operators] == ["b"]  # type: ignore[union-attr]
    assert any("sections given more than once (OPAT 2 times); only the last of each is read" in w for w in result_file.warnings)
    summary = cli("report", str(path), "--format", "json")
    assert "OPAT 2 times" in summary.err and [op["name"] for op in json.loads(summary.out)["operators"]] == ["b"]
    validated = cli("validate", str(path))
    assert validated.code == 1 and "Too many items match" in validated.out + validated.err
