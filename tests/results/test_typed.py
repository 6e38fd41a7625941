"""The typed fast decoder must give exactly what the generic decoder gives, whenever it accepts a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aoe_runner.errors import InputError
from aoe_runner.results.normalize import normalize
from aoe_runner.results.raw import decode
from aoe_runner.results.typed import NotTyped, decode_typed
from tests.conftest import DATA, SAMPLES

ALL_FILES = sorted([*SAMPLES.rglob("*.json"), *DATA.rglob("*.json")])

_time = st.one_of(
    st.floats(min_value=0.001, max_value=1e6, allow_nan=False),
    st.integers(0, 10**6),
    st.sampled_from(["12.5", "fast", None, 1e308]),
)
_improvement = st.one_of(st.none(), st.sampled_from(["10.00%", "-3%", "n/a", "", 12.5]), st.floats(-100, 1000))
_update_mode = st.sampled_from(["add", "update", "replace", None, ["add"], 3])
_op_type = st.sampled_from(["Add", ["MatMulV2", "Relu"], [], None, [1, "Cast"], 7])


@st.composite
def operator_records(draw: st.DrawFn) -> dict:  # type: ignore[type-arg]
    perf = {
        "performance_before_tune(us)": draw(_time),
        "performance_after_tune(us)": draw(_time),
        "performance_improvement": draw(_improvement),
        "update_mode": draw(_update_mode),
        "extra": 1,
    }
    perf = {key: value for key, value in perf.items() if value is not None or draw(st.booleans())}
    record = {"op_name": draw(st.sampled_from(["conv", "调优算子", "mm"])), "op_type": draw(_op_type),
              "tune_performance": {draw(st.sampled_from(["Format", "Schedule", "Impl"])): perf}}  # fmt: skip
    return {key: value for key, value in record.items() if key == "op_name" or draw(st.integers(0, 9))}


@st.composite
def training_documents(draw: st.DrawFn) -> dict:  # type: ignore[type-arg]
    reports = {}
    for index in range(draw(st.integers(1, 3))):
        opat = {"opat_tuning_result": draw(st.sampled_from(["tuning successful", "tuning failed", 3])),
                "repo_modified_operators": draw(st.lists(operator_records(), max_size=5)),
                "repo_summary": {"repo_add_num": draw(st.integers(0, 3)), "total_num": 3},
                "model_baseline_performance(ms)": draw(_time), "model_result_performance(ms)": draw(_time),
                "tuning_failed_operators": draw(st.sampled_from([[], ["x"], None])), "unknown_key": [1]}  # fmt: skip
        parts = [{"basic": {"tuning_name": "t", "tuning_time(s)": draw(_time)}}, {"OPAT": opat}]
        if draw(st.booleans()):
            parts.append({"SGAT": {"repo_modified_subgraphs": {"add_repo_subgraphs": []}}})
        if draw(st.integers(0, 9)) == 0:
            parts = [{"OPAT": None}]
        reports[f"report_2026010{index}000000000_{index}"] = parts
    return reports


def _outcome(data: bytes, typed: bool) -> object:
    """The normalised file as plain data, or the error it raised."""
    try:
        return normalize(decode(data, "f", typed=typed), "f", "f").model_dump()
    except InputError as error:
        return str(error)


def _both_ways(data: bytes) -> tuple[object, object]:
    return _outcome(data, typed=True), _outcome(data, typed=False)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(document=training_documents())
def test_typed_and_generic_paths_agree_on_generated_files(document: dict) -> None:  # type: ignore[type-arg]
    fast, generic = _both_ways(json.dumps(document, ensure_ascii=False).encode())
    assert fast == generic


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_typed_and_generic_paths_agree_on_every_shipped_file(path: Path) -> None:
    fast, generic = _both_ways(path.read_bytes())
    assert fast == generic


def test_an_infinite_time_is_skipped_and_counted_the_same_way_by_both_paths() -> None:
    perf = '{"performance_before_tune(us)": 1e400, "performance_after_tune(us)": 2.0}'
    data = f'{{"report_1": [{{"OPAT": {{"repo_modified_operators": [{{"op_name": "a", "tune_performance": {{"Schedule": {perf}}}}}]}}}}]}}'
    fast, generic = _both_ways(data.encode())
    assert fast == generic
    assert "1 of 1 operator records skipped" in str(fast)


def test_the_plain_current_format_takes_the_typed_path() -> None:
    data = (SAMPLES / "training_opat").glob("*.json").__next__().read_bytes()
    entries = decode_typed(data)
    assert entries and all(key.startswith("report_") for key, _ in entries)


@pytest.mark.parametrize(
    ("variant", "text", "generic_can_decode"),
    [
        ("offline list", b'[{"OPAT": {}}]', True),
        ("CANN 6.0 add/update lists", b'{"report_1": [{"OPAT": {"repo_modified_operators": {"add_repo_operators": []}}}]}', True),
        ("flat operator times", b'{"report_1": [{"OPAT": {"repo_modified_operators": [{"op_name": "a"}]}}]}', True),
        ("unknown section", b'{"report_1": [{"WHAT": {}}]}', True),
        ("repeated report key", b'{"report_1": [{"basic": {}}], "report_1": [{"basic": {}}]}', False),
        ("repeated key of any name", b'{"x": [{"basic": {}}], "x": [{"OPAT": null}], "y": [{"basic": {}}]}', False),
        ("a repeated key, once with an empty list", b'{"report_1": [], "report_1": [{"basic": {}}]}', False),
        ("a repeated key written with an escape", b'{"report_1": [{"basic": {}}], "\\u0072eport_1": [{"basic": {}}]}', False),
        ("truncated", b'{"report_1": [{"basic": {', False),
    ],
)
def test_other_variants_are_left_to_the_other_decoders(variant: str, text: bytes, generic_can_decode: bool) -> None:
    with pytest.raises(NotTyped) as miss:
        decode_typed(text)
    assert miss.value.generic_can_decode is generic_can_decode


_report_lists = st.lists(st.sampled_from(['{"basic": {}}', '{"OPAT": null}', '{"SGAT": {}}']), max_size=2)
_written_keys = st.sampled_from(["report_1", "report_2", "x", "\\u0072eport_1"])  # the last is report_1 again


@settings(max_examples=300)
@given(members=st.lists(st.tuples(_written_keys, _report_lists), min_size=1, max_size=4))
def test_repeated_keys_are_never_read_as_one(members: list[tuple[str, list[str]]]) -> None:
    """A dict keeps only the last value of a repeated key: the typed path must see the repetition whatever the key,
    however it is written and however many parts each list has, and read every report as the slow path does. The
    generic path must agree."""
    data = ("{" + ", ".join(f'"{key}": [{", ".join(parts)}]' for key, parts in members) + "}").encode()
    keys = [json.loads(f'"{key}"') for key, _ in members]
    if len(set(keys)) < len(keys):
        with pytest.raises(NotTyped):
            decode_typed(data)
    fast, generic = _both_ways(data)
    if not isinstance(fast, str):  # not a file where no report holds a section
        kept = [key for key, (_, parts) in zip(keys, members, strict=True) if parts]  # an empty list is no report
        assert [report["key"] for report in fast["reports"]] == kept  # type: ignore[index]
    assert fast == generic
