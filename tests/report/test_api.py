from __future__ import annotations

import gc
import os
import pickle
import sys
import time
from pathlib import Path

import pytest

from aoe_runner.cli import main as cli
from aoe_runner.cli import report as report_command
from aoe_runner.report import api as reporting
from aoe_runner.report.api import Loaded, merge_files, summarize_paths
from aoe_runner.report.summary_data import summary_of
from aoe_runner.results.files import find_result_files
from tests.conftest import DATA, SAMPLES


def test_the_report_command_runs_without_collections_and_gives_the_collector_back_after_it_returns(
    tmp_path: Path,
) -> None:
    """Switching the collector back on while the merged state and the summary are alive made the next allocations
    walk all of them (two collections, 40-60 ms of a report of 30,000 entries). No collection starts while `report`
    runs, from parsing its options to writing its output, and the collector is on again afterwards."""
    report_code = getattr(report_command.report, "__wrapped__", report_command.report).__code__
    inside: list[bool] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            frame = sys._getframe(1)
            while frame is not None and frame.f_code is not report_code:
                frame = frame.f_back  # type: ignore[assignment]
            inside.append(frame is not None)

    was_enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.callbacks.append(count)
    try:
        gc.enable()
        gc.set_threshold(1)  # a collection at nearly every allocation, unless paused
        code = cli.main(["report", str(SAMPLES), "--format", "json", "--output", str(tmp_path / "summary.json")])
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
        (gc.enable if was_enabled else gc.disable)()
    assert code == 0 and (tmp_path / "summary.json").stat().st_size > 0
    assert inside and not any(inside)  # collections happened around the command, none inside it


def test_worker_processes_give_exactly_the_serial_result() -> None:
    paths, _ = find_result_files([str(SAMPLES), str(DATA)])
    serial, serial_count, serial_errors = merge_files(paths, workers=1)
    parallel, parallel_count, parallel_errors = merge_files(paths, workers=2)
    assert summary_of(parallel).model_dump() == summary_of(serial).model_dump()
    assert parallel_count == serial_count == 12  # 9 AOE files and 3 legacy Auto Tune files
    assert [e.message for e in parallel_errors] == [e.message for e in serial_errors]
    assert len(serial_errors) == 4


def test_the_parent_and_a_worker_each_take_files_and_their_states_fold_into_the_serial_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files go to whichever process asks first; here the parent's first file waits until the worker has taken one,
    so that both states are certain to hold files (the worker's comes back marshalled)."""
    paths, _ = find_result_files([str(SAMPLES), str(DATA)])
    parent, worker_took_one = os.getpid(), tmp_path / "worker-took-a-file"
    load = reporting._load

    def load_when_both_work(where: str, cache: object) -> object:
        if os.getpid() != parent:
            worker_took_one.touch()
        deadline = time.monotonic() + 60
        while not worker_took_one.exists():
            assert time.monotonic() < deadline, "the worker took no file"
            time.sleep(0.005)
        return load(where, cache)  # type: ignore[arg-type]

    monkeypatch.setattr(reporting, "_load", load_when_both_work)
    parts = list(reporting._merge_parts([os.fspath(path) for path in paths], 2, None))
    assert len(parts) == 2 and all(loaded >= 1 for _, loaded, _, _ in parts)
    folded = parts[0][0]
    folded.absorb(parts[1][0])
    serial, serial_count, _ = merge_files(paths, workers=1)
    assert sum(loaded for _, loaded, _, _ in parts) == serial_count
    assert summary_of(folded).model_dump() == summary_of(serial).model_dump()


def test_summarize_paths_keeps_path_errors_before_file_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    loaded = summarize_paths([str(tmp_path / "missing"), str(DATA / "bad")], workers=2)
    assert loaded.files_loaded == 0
    assert loaded.errors[0].reason == "no such file or directory"
    assert [e.where.rsplit("/", 1)[1] for e in loaded.errors[1:]] == [
        "aoe_result_opat_garbage.json",
        "aoe_result_opat_number.json",
        "aoe_result_opat_object.json",
        "aoe_result_opat_utf16.json",
    ]


def test_the_collector_is_paused_while_merging_and_summarising_and_then_as_it_was() -> None:
    paths, _ = find_result_files([str(SAMPLES)])
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    was_enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.callbacks.append(count)
    try:
        gc.enable()
        gc.set_threshold(1)  # a collection at nearly every allocation, unless paused
        state, loaded, _ = merge_files(paths, workers=1, cache=None)
        data = Loaded(state, loaded).data
        gc.set_threshold(*thresholds)
        assert (
            len(collections) <= 20 and gc.isenabled()
        )  # the few between the paused parts (more when modules load then); about 100 unpaused
        assert data["totals"]["files"] == len(paths)
        gc.disable()
        merge_files(paths, workers=1, cache=None)
        assert not gc.isenabled()  # a caller's choice is left as it was
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
        (gc.enable if was_enabled else gc.disable)()


def test_a_worker_state_that_msgpack_cannot_write_travels_marshalled() -> None:
    paths, _ = find_result_files([str(SAMPLES)])
    state, loaded, _ = merge_files(paths, workers=1)
    state.operators.entries[0].key = "lone \ud800 surrogate"  # msgpack writes only valid UTF-8
    sent = reporting._chunk_to_wire((state, loaded, [], []))
    assert sent[0] is False  # not msgpack
    received, count, _, _ = reporting._chunk_from_wire(pickle.loads(pickle.dumps(sent)))
    assert count == loaded and received.to_wire() == state.to_wire()
