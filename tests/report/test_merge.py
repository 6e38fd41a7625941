"""The merge engine (report/merge.py, report/entries.py, results/parsed.py) against the oracle (oracle.py): byte for byte."""

from __future__ import annotations

import json
import marshal
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aoe_runner.common.jsontext import dump_json
from aoe_runner.common.regular_files import read_regular_file, read_with_status
from aoe_runner.render.json_format import JsonFormatter, json_pieces
from aoe_runner.report import summary_data
from aoe_runner.report.api import merge_files
from aoe_runner.report.merge import BankState
from aoe_runner.report.summary_data import summary_of
from aoe_runner.results.files import find_result_files
from aoe_runner.results.loader import load_result_file
from aoe_runner.results.parse import parse_result_file
from aoe_runner.results.parsed import ParsedFile, from_result_file
from tests.conftest import DATA, SAMPLES
from tests.report import oracle

FIXTURES = [path for path in find_result_files([str(SAMPLES), str(DATA)])[0]]


def plain_json(data: dict[str, Any]) -> bytes | None:
    """json_pieces on summary data with its rows, in one batch, joined: the bytes orjson writes, or None (pydantic)."""
    pieces = json_pieces(data, [data["operators"]])
    return None if pieces is None else b"".join(pieces)


def _reference(paths: list[Path], min_gain_pct: float = 1.0) -> str:
    merger = oracle.BankMerger()
    for path in paths:
        try:
            merger.add_file(load_result_file(path))
        except Exception:  # noqa: BLE001 (a file that is an InputError adds nothing to either side)
            continue
    return dump_json(merger.summary(min_gain_pct))


def _engine(paths: list[Path], min_gain_pct: float = 1.0) -> str:
    state, _, _ = merge_files(paths, workers=1)
    written = plain_json(summary_data.summary_data(state, min_gain_pct))
    text = written.decode() if written is not None else dump_json(summary_of(state, min_gain_pct))
    assert text == dump_json(summary_of(state, min_gain_pct))  # the plain data and its pydantic model write the same
    parts = summary_data.summary_parts(state, min_gain_pct)
    streamed = JsonFormatter().summary_parts(*parts, None, lambda: summary_of(state, min_gain_pct))
    assert (streamed if isinstance(streamed, str) else b"".join(streamed).decode()) == text  # rows made a batch at a time
    return text


def test_every_fixture_together_gives_the_reference_json() -> None:
    assert _engine(FIXTURES) == _reference(FIXTURES)
    assert _engine(FIXTURES, 25.0) == _reference(FIXTURES, 25.0)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_each_fixture_gives_the_reference_json(path: Path) -> None:
    assert _engine([path]) == _reference([path])


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_typed_columns_equal_the_normalisers(path: Path) -> None:
    """Whichever way a file is parsed, the same records, report facts and warnings."""
    data, info = read_with_status(str(path))  # every byte, as the parsers would see them, refused or not
    mtime = info.st_mtime
    try:
        fast = parse_result_file(str(path), data, mtime)
    except Exception:  # noqa: BLE001 (an InputError: compared by the CLI tests)
        return
    slow = from_result_file(load_result_file(path))
    assert _wire(fast) == _wire(slow)


def _wire(parsed: ParsedFile) -> object:
    return ParsedFile.from_bytes(parsed.to_bytes()).to_bytes() if parsed.cacheable else parsed.warnings


def _random_document(rng: random.Random, names: list[str], odd: float) -> dict[str, object]:
    """A current-format training file with operators that repeat, fuse types, take several modes, and now and then
    carry a figure that disagrees, a zero or negative time, or a huge one."""
    document: dict[str, object] = {}
    for report in range(rng.randint(1, 3)):
        operators = []
        for _ in range(rng.randint(0, 12)):
            before = round(rng.uniform(1, 500), 3)
            after = round(before / rng.uniform(0.8, 2.5), 3)
            figure = f"{(before / after - 1) * 100:.2f}%"
            roll = rng.random() / odd if odd else 1.0
            if roll < 0.05:
                figure = "12.34%"
            elif roll < 0.08:
                after = 0
            elif roll < 0.1:
                before = 1e301
            elif roll < 0.12:
                figure = None  # type: ignore[assignment]
            mode = rng.choice(["Format", "Schedule", "Impl"])
            performance = {"performance_before_tune(us)": before, "performance_after_tune(us)": after}
            if figure is not None:
                performance["performance_improvement"] = figure  # type: ignore[assignment]
            performance["update_mode"] = rng.choice(["add", "update", "other"] if odd else ["add", "update"])  # type: ignore[assignment]
            op_type: object = rng.choice(["MatMulV2", ["MatMulV2"], ["Mul", "Sigmoid"], None])
            operators.append({"op_name": rng.choice(names), "op_type": op_type, "tune_performance": {mode: performance}})
        key = f"report_2026031{rng.randint(0, 2)}0{rng.randint(0, 9)}0000{report}{rng.randint(0, 9)}_{rng.randint(1, 99)}"
        document[key] = [
            {"basic": {"tuning_name": "net", "tuning_time(s)": rng.randint(1, 100)}},
            {"OPAT": {"opat_tuning_result": "tuning successful", "repo_modified_operators": operators}},
        ]
    return document


@pytest.mark.parametrize("seed", range(12))
def test_random_corpora_give_the_reference_json(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    names = [f"net/layer_{n}/op" for n in range(8)]
    paths = []
    for number in range(rng.randint(2, 6)):
        path = tmp_path / f"aoe_result_opat_2026031{number % 3}120000000_{number}.json"
        odd = 0.0 if seed % 2 else 1.0  # odd seeds: only plain records, which the typed fast path takes
        path.write_text(json.dumps(_random_document(rng, names, odd), indent=2), encoding="utf-8")
        paths.append(path)
    assert _engine(paths) == _reference(paths)
    split, _, _ = merge_files(paths, workers=2)
    assert dump_json(summary_of(split)) == _reference(paths)


@pytest.mark.parametrize("seed", range(6))
def test_typed_records_merge_as_their_cached_columns_do(tmp_path: Path, seed: int) -> None:
    """merge_typed (a file just parsed) and merge (the same file read back from the cache, in columns) leave the same
    state: every entry's latest and fastest result, its count and the positions that break ties. So does
    merging with `spend`, which frees each typed record as it is merged."""
    rng = random.Random(seed)
    names = [f"net/layer_{n}/op" for n in range(6)]
    fresh, cached, spent = BankState(), BankState(), BankState()
    for number in range(4):
        path = tmp_path / f"aoe_result_opat_2026031{number % 2}120000000_{number}.json"
        path.write_text(json.dumps(_random_document(rng, names, 0.0)), encoding="utf-8")
        data, mtime = read_regular_file(str(path))
        parsed = parse_result_file(str(path), data, mtime)
        assert parsed.raw is not None and not parsed.typed and not parsed.operators
        fresh.add(parsed)
        cached.add(ParsedFile.from_bytes(parsed.to_bytes()))  # still whole once merged: the cache can store it
        spent.add(parse_result_file(str(path), data, mtime), spend=True)
    assert fresh.to_wire() == cached.to_wire() == spent.to_wire() and len(fresh.operators) > 1


def _batched_document(bad: int, kind: str) -> dict[str, object]:
    """Two reports of 600 plain records (parsed.BATCH_RECORDS 256: three batches each), record `bad` of the second
    one made something the typed path cannot take as it is."""
    reports: dict[str, object] = {}
    for number in range(2):
        operators: list[dict[str, Any]] = []
        for index in range(600):
            before, after = 100.0 + index % 7, 80.0 + (index * 13 + number) % 11
            performance = {"performance_before_tune(us)": before, "performance_after_tune(us)": after}
            performance["performance_improvement"] = f"{(before / after - 1) * 100:.2f}%"  # type: ignore[assignment]
            operators.append({"op_name": f"op_{index % 450}", "op_type": "MatMulV2", "tune_performance": {"Format": performance}})
        if number == 1 and kind == "disagreeing figure":
            operators[bad]["tune_performance"]["Format"]["performance_improvement"] = "12.34%"
        elif number == 1 and kind == "zero time":
            operators[bad]["tune_performance"]["Format"]["performance_after_tune(us)"] = 0
        elif number == 1 and kind == "name not a string":
            operators[bad]["op_name"] = 5
        elif number == 1 and kind == "invalid UTF-8":
            operators[bad]["op_name"] = "INVALID-UTF-8"  # made a byte that is not UTF-8 once written
        elif number == 1 and kind == "times not numbers":
            operators[bad]["tune_performance"]["Format"]["performance_before_tune(us)"] = "fast"
        reports[f"report_2026031{number}120000000_{number}"] = [
            {"basic": {"tuning_name": "net"}},
            {"OPAT": {"opat_tuning_result": "tuning successful", "repo_modified_operators": operators}},
        ]
    return reports


@pytest.mark.parametrize("bad", [0, 255, 256, 300, 599])
@pytest.mark.parametrize("kind", ["disagreeing figure", "zero time", "name not a string", "times not numbers", "invalid UTF-8"])
def test_a_record_the_normaliser_must_read_in_any_batch_gives_the_reference(tmp_path: Path, bad: int, kind: str) -> None:
    """Records are decoded and merged a batch at a time; a batch with a record the typed path cannot take sends the
    rest of the file to the normaliser, after the batches already merged: the same summary, warnings included, as
    the reference, and as the file stored in the cache and read back."""
    path = tmp_path / "aoe_result_opat_20260310120000000_1.json"
    path.write_bytes(json.dumps(_batched_document(bad, kind)).encode().replace(b"INVALID-UTF-8", b"op_\xff"))
    assert _engine([path]) == _reference([path])
    assert "warnings" in _engine([path]) and json.loads(_engine([path]))["files"][0]["warnings"]
    data, mtime = read_regular_file(str(path))
    merged, stored = BankState(), BankState()
    merged.add(parse_result_file(str(path), data, mtime), spend=True)
    stored.add(ParsedFile.from_bytes(parse_result_file(str(path), data, mtime).to_bytes()))
    assert merged.to_wire() == stored.to_wire()


def test_a_state_read_back_from_bytes_gives_the_same_summary() -> None:
    state, _, _ = merge_files([p for p in FIXTURES if "legacy" not in str(p)], workers=1)
    again = BankState.from_bytes(state.to_bytes())
    assert dump_json(summary_of(again)) == dump_json(summary_of(state))


def test_a_state_holds_each_distinct_op_type_mode_and_figure_once_and_reads_back_whole() -> None:
    state, _, _ = merge_files([p for p in FIXTURES if "legacy" not in str(p)], workers=1)
    wire = state.to_wire()
    keys, types, _, modes, _, raws, _, *_ = wire[2]
    assert len(types) == len(set(types)) and len(modes) == len(set(modes)) and len(raws) == len(set(raws))
    assert len(raws) < len(keys)  # figures repeat in the fixtures: stored once each
    again = BankState.from_wire(marshal.loads(marshal.dumps(wire)))
    assert again.to_wire() == wire


@pytest.mark.parametrize(
    "damage",
    [
        lambda table: table[9].pop(),  # a column shorter than the keys
        lambda table: table[2].__setitem__(0, len(table[1])),  # an op type index past its table
        lambda table: table[8].__setitem__(0, 10**6),  # a report past the sources
        lambda table: table.pop(),  # a column missing
    ],
)
def test_a_damaged_state_is_a_value_error(damage: Any) -> None:
    state, _, _ = merge_files([p for p in FIXTURES if "legacy" not in str(p)], workers=1)
    wire = state.to_wire()
    damage(wire[2])
    with pytest.raises(ValueError):
        BankState.from_bytes(msgspec.msgpack.encode(wire))


def test_json_that_orjson_cannot_write_as_pydantic_does_falls_back_to_pydantic() -> None:
    state, _, _ = merge_files([SAMPLES / "offline" / "aoe_result_opat_20260311101500123_51002.json"], workers=1)
    data = summary_data.summary_data(state, 1.0)
    data["operators"][0]["before_us"] = 1.5e16  # orjson writes 1.5e16, pydantic 1.5e+16
    assert plain_json(data) is None
    data["operators"][0]["before_us"] = 1.0
    data["operators"][0]["name"] = "lone \ud800 surrogate"
    assert plain_json(data) is None


_FAST_WRITTEN = merge_files([SAMPLES / "offline" / "aoe_result_opat_20260311101500123_51002.json"], workers=1)[0]


@settings(max_examples=300, deadline=None)
@given(
    name=st.text(),
    raw=st.none() | st.text(),
    figures=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=3, max_size=3),
    tuning_time=st.floats(allow_nan=False, allow_infinity=False),
)
def test_plain_json_writes_any_names_and_figures_as_pydantic_does_or_leaves_them_to_it(
    name: str, raw: str | None, figures: list[float], tuning_time: float
) -> None:
    """orjson on the plain data, against pydantic on the model built from it: the same bytes, or None (pydantic)."""
    data = summary_data.summary_data(_FAST_WRITTEN, 1.0)
    entry = data["operators"][0]
    entry["name"], entry["improvement_raw"] = name, raw
    entry["before_us"], entry["after_us"], entry["speedup"] = figures
    data["totals"]["tuning_time_s"] = tuning_time
    written = plain_json(data)
    if written is not None:
        assert written.decode() == dump_json(summary_data.bank_summary(data))


def test_a_nan_does_not_hide_a_float_written_with_an_exponent() -> None:
    state, _, _ = merge_files([path for path in FIXTURES if path.parent.name == "training_opat"], workers=1)
    data = summary_data.summary_data(state, 1.0)
    assert len(data["operators"]) > 1 and plain_json(data) is not None
    data["operators"][0]["speedup"] = float("nan")  # max() over [nan, 2e16] is nan: a check by max() missed the big one
    data["operators"][1]["speedup"] = 2e16
    assert plain_json(data) is None


def test_a_plain_training_file_takes_the_typed_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "aoe_result_opat_20260310120000000_1.json"
    path.write_text(json.dumps(_random_document(random.Random(1), ["a", "b"], 0.0)), encoding="utf-8")
    data, mtime = read_regular_file(str(path))

    def no_generic_decode(*args: object, **kwargs: object) -> None:
        raise AssertionError("the generic decoder was used")

    monkeypatch.setattr("aoe_runner.results.loader.decode", no_generic_decode)
    parsed = parse_result_file(str(path), data, mtime)
    parsed.settle()
    assert sum(map(len, parsed.typed)) > 0 and len(parsed.operators) == 0
    assert len(parsed.operator_columns()) == sum(len(record.tune_performance) for records in parsed.typed for record in records)
