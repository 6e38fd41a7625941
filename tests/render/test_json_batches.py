"""`--format json` makes and writes the operators' rows a batch at a time (json_format.BATCH_ROWS): the same bytes as
pydantic writes the whole summary, whatever batch an entry falls in, and the pydantic fallback when a batch holds what
orjson cannot write as pydantic does."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from aoe_runner.common.jsontext import dump_json
from aoe_runner.render.json_format import BATCH_ROWS, JsonFormatter
from aoe_runner.report import summary_data
from aoe_runner.report.api import merge_files
from aoe_runner.report.merge import BankState
from aoe_runner.report.summary_data import summary_of

OPERATORS = 2 * BATCH_ROWS + 300  # three batches, the last one short


def operators_file(directory: Path, seed: int) -> Path:
    """A training file of OPERATORS distinct operators with figures of all sizes, fused types and several modes."""
    rng = random.Random(seed)
    records = []
    for number in range(OPERATORS):
        before = round(rng.uniform(1, 500), 3)
        after = round(before / rng.uniform(0.7, 2.5), 3)
        op_type: object = rng.choice(["MatMulV2", ["Mul", "Sigmoid"], None])
        mode = rng.choice(["Format", "Schedule"])
        performance = {
            "performance_before_tune(us)": before,
            "performance_after_tune(us)": after,
            "performance_improvement": f"{(before / after - 1) * 100:.2f}%",
            "update_mode": rng.choice(["add", "update"]),
        }
        records.append({"op_name": f"model/block_{number}/op", "op_type": op_type, "tune_performance": {mode: performance}})
    document = {
        "report_20260310120000000_1": [
            {"basic": {"tuning_name": "net", "tuning_time(s)": 10}},
            {"OPAT": {"opat_tuning_result": "tuning successful", "repo_modified_operators": records}},
        ]
    }
    path = directory / f"aoe_result_opat_2026031012000000{seed}_1.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> BankState:
    directory = tmp_path_factory.mktemp("batches")
    merged, _, errors = merge_files([operators_file(directory, seed) for seed in (1, 2)], workers=1)
    assert not errors and len(merged.operators) > 2 * BATCH_ROWS
    return merged


def _written(state: BankState, top: int | None) -> str | list[bytes | memoryview]:
    return JsonFormatter().summary_parts(*summary_data.summary_parts(state, 1.0), top, lambda: summary_of(state))


def _streamed(state: BankState, top: int | None) -> str:
    written = _written(state, top)
    return written if isinstance(written, str) else b"".join(written).decode()


def _pydantic(state: BankState, top: int | None) -> str:
    return JsonFormatter().summary_model(summary_of(state), top)


@pytest.mark.parametrize("top", [None, 1, BATCH_ROWS - 1, BATCH_ROWS, BATCH_ROWS + 1, 2 * BATCH_ROWS + 7, 10**6])
def test_rows_written_a_batch_at_a_time_are_pydantics_bytes(state: BankState, top: int | None) -> None:
    assert _streamed(state, top) == _pydantic(state, top)


def test_the_rows_come_in_several_pieces(state: BankState) -> None:
    written = _written(state, None)
    batches = -(-len(state.operators) // BATCH_ROWS)
    assert batches >= 3 and isinstance(written, list)
    assert len(written) == 1 + 2 * batches + 2  # the head, "[" or "," and a batch each, "]", the tail


def _last_ranked(state: BankState) -> object:
    return summary_data.summary_parts(state, 1.0)[1][-1]


def test_a_float_pydantic_writes_with_an_exponent_in_the_last_batch_leaves_the_summary_to_pydantic(
    state: BankState,
) -> None:
    entry = _last_ranked(state)
    before, after = entry.before, entry.after  # type: ignore[attr-defined]
    entry.before, entry.after = 2e16, 2e16 + 2**20  # type: ignore[attr-defined]  # saves the least: still ranked last
    try:
        assert _last_ranked(state) is entry
        written = _written(state, None)  # orjson before 3.13 wrote 2e16, pydantic 2e+16
        assert isinstance(written, str) and written == dump_json(summary_data.bank_summary(summary_data.summary_data(state, 1.0)))
    finally:
        entry.before, entry.after = before, after  # type: ignore[attr-defined]


def test_a_lone_surrogate_in_the_last_batch_leaves_the_summary_to_pydantic(state: BankState) -> None:
    entry = _last_ranked(state)
    key = entry.key  # type: ignore[attr-defined]
    entry.key = "model/lone \ud800 surrogate"  # type: ignore[attr-defined]
    try:
        assert _last_ranked(state) is entry
        written = _written(state, None)  # orjson refuses it
        assert isinstance(written, str) and written == dump_json(summary_data.bank_summary(summary_data.summary_data(state, 1.0)))
        assert "\\ud800" in written
    finally:
        entry.key = key  # type: ignore[attr-defined]
