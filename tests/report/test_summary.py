from __future__ import annotations

import pytest

from aoe_runner.report.api import summarize_paths
from aoe_runner.results.loader import load_result_file
from tests.conftest import DATA, SAMPLES
from tests.report.oracle import summarize


def _entry(summary, name, mode):  # type: ignore[no-untyped-def]
    (entry,) = [e for e in summary.operators if e.name == name and e.tuning_mode == mode]
    return entry


def test_latest_result_wins_with_provenance_and_count() -> None:
    summary = summarize_paths([str(SAMPLES / "training_opat"), str(SAMPLES / "retune")]).summary
    softmax = _entry(summary, "bert/encoder/layer_10/attention/self/Softmax_OPAT_0", "Format")
    assert softmax.after_us == 25.113 and softmax.update_mode.value == "update"
    assert softmax.times_tuned == 2
    assert softmax.source.report_key == "report_20260317091500120_52010"
    assert softmax.source.timestamp_source == "report key"
    assert softmax.source.file.endswith("retune/aoe_result_opat_20260317091500120_52008.json")
    assert softmax.conflict is None  # it got faster: a consistent history
    # the same operator tuned in another mode is another entry
    assert _entry(summary, "bert/encoder/layer_10/attention/self/Softmax_OPAT_0", "Schedule").times_tuned == 1


def test_a_later_slower_result_from_another_file_is_a_conflict() -> None:
    summary = summarize_paths([str(SAMPLES / "training_opat"), str(SAMPLES / "retune")]).summary
    matmul = _entry(summary, "bert/encoder/layer_3/intermediate/dense/MatMul", "Schedule")
    assert matmul.after_us == 36.9
    assert matmul.conflict and "33.805" in matmul.conflict
    assert summary.conflicts == ["bert/encoder/layer_3/intermediate/dense/MatMul [MatMulV2] (Schedule)"]


def test_totals_on_the_samples() -> None:
    t = summarize_paths([str(SAMPLES)]).summary.totals
    assert (t.files, t.partial_files, t.reports) == (6, 1, 8)
    assert (t.operators, t.operators_added, t.operators_updated) == (16, 13, 3)
    assert (t.subgraphs, t.subgraphs_added, t.subgraphs_updated) == (2, 1, 1)
    assert t.operator_time_saved_us == pytest.approx(206.137)
    assert t.subgraph_time_saved_ms == pytest.approx(4.022274)
    assert (t.opat_repo.hit, t.opat_repo.total, t.opat_hit_rate) == (36, 72, 0.5)
    assert t.sgat_repo.unsatisfied == 120
    assert (t.failed_reports, t.incomplete_reports, t.failed_operators) == (1, 0, ["res4a_branch1"])
    assert t.tuning_time_s == 3380.5 and t.reports_without_tuning_time == 0


def test_per_op_type_stats_and_no_real_gain() -> None:
    summary = summarize_paths([str(SAMPLES)]).summary
    conv = next(s for s in summary.op_types if s.op_type == "Conv2D")
    assert conv.entries == 3 and conv.time_saved_us == pytest.approx(58.63 + 24 + 1)
    assert conv.median_speedup == pytest.approx(142 / 118)
    assert summary.op_types[0].op_type == "Conv2D"  # sorted by time saved
    assert summary.no_real_gain == [
        "model/9/cv2/conv/Conv2D [Conv2D] (Format)",
        "bert/embeddings/LayerNorm/batchnorm/add_1 [LayerNorm] (Format)",
    ]
    below_ten_pct = summarize_paths([str(SAMPLES)], min_gain_pct=10).summary.no_real_gain
    assert [label.split(" [")[0] for label in below_ten_pct] == [  # speed-ups 1.083, 1.064, 1.008, 1.004
        "resnet_model/dense/MatMul",
        "bert/encoder/layer_8/attention/output/dense/MatMulbert/encoder/layer_8/attention/output/add",
        "model/9/cv2/conv/Conv2D",
        "bert/embeddings/LayerNorm/batchnorm/add_1",
    ]


def test_entries_are_sorted_by_time_saved() -> None:
    summary = summarize_paths([str(SAMPLES)]).summary
    saved = [e.time_saved_us for e in summary.operators]
    assert saved == sorted(saved, reverse=True)


def test_model_points_in_time_order() -> None:
    points = summarize_paths([str(SAMPLES)]).summary.model_times
    assert [(p.section, p.tuning_name) for p in points] == [("SGAT", "resnet50_子图调优"), ("OPAT", "yolov5s_offline")]
    assert points[1].source.timestamp_source == "file name"


def test_reports_without_any_timestamp_fall_back_to_mtime() -> None:
    f = load_result_file(DATA / "duplicate_keys" / "aoe_result_opat_20260401120000000_2.json")
    f.file_timestamp = None
    summary = summarize([f])
    assert {e.source.timestamp_source for e in summary.operators} == {"file mtime"}
    assert [e.name for e in summary.operators] == ["conv1", "conv2"]
