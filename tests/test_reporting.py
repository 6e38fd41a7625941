from __future__ import annotations

from aoe_runner.reporting import merge_files, summarize_paths
from aoe_runner.results import find_result_files
from tests.conftest import DATA, SAMPLES


def test_worker_processes_give_exactly_the_serial_result() -> None:
    paths, _ = find_result_files([str(SAMPLES), str(DATA)])
    serial, serial_count, serial_errors = merge_files(paths, workers=1)
    parallel, parallel_count, parallel_errors = merge_files(paths, workers=2)
    assert parallel.summary().model_dump() == serial.summary().model_dump()
    assert parallel_count == serial_count == 12  # 9 AOE files and 3 legacy Auto Tune files
    assert [e.message for e in parallel_errors] == [e.message for e in serial_errors]
    assert len(serial_errors) == 4


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
