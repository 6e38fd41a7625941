from __future__ import annotations

import os
from pathlib import Path

import pytest

from aoe_runner.errors import InputError
from aoe_runner.results.files import find_result_files
from aoe_runner.results.loader import load_all, load_result_file
from tests.conftest import SAMPLES


def test_directory_is_searched_recursively_including_aoe_data(samples: Path) -> None:
    files, errors = find_result_files([str(samples)])
    assert errors == []
    assert len(files) == 6
    assert any(p.parent.name == "aoe_data" for p in files)


def test_glob_patterns_files_and_duplicates(samples: Path) -> None:
    pattern = str(samples / "**" / "aoe_result_*.json")
    one = samples / "offline" / "aoe_result_opat_20260311101500123_51002.json"
    files, errors = find_result_files([str(one), pattern, str(one)])
    assert errors == []
    assert files[0] == one and len(files) == 6  # first mention wins, no repeats


def test_every_unusable_path_is_an_error_and_the_rest_still_count(samples: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    files, errors = find_result_files(
        [str(tmp_path / "missing"), str(samples / "cann60"), str(empty), str(tmp_path / "*.nothing")]
    )
    assert len(files) == 1
    assert [e.reason for e in errors] == [
        "no such file or directory",
        "no aoe_result_*.json or tune_result_*.json files in this directory or below it",
        "no files match this pattern",
    ]


def test_load_all_streams_files_and_errors(tmp_path: Path, samples: Path) -> None:
    unreadable = tmp_path / "aoe_result_opat_x.json"
    unreadable.write_text("{}")
    os.chmod(unreadable, 0)
    paths = [samples / "cann60" / "aoe_result_opat_20220815_093012345_23001.json", unreadable, tmp_path / "gone.json"]
    loaded = list(load_all(paths))
    assert not isinstance(loaded[0], InputError)
    assert isinstance(loaded[2], InputError) and "cannot read" in loaded[2].reason
    if os.geteuid() != 0:  # root reads anything
        assert isinstance(loaded[1], InputError)


def test_a_file_time_that_datetime_cannot_hold_is_no_error(tmp_path: Path) -> None:
    directory = Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp_path  # tmpfs keeps any 64-bit time
    path = directory / f"aoe_result_opat_mtime_{os.getpid()}.json"
    path.write_bytes((SAMPLES / "cann60" / "aoe_result_opat_20220815_093012345_23001.json").read_bytes())
    try:
        os.utime(path, (10**14, 10**14))  # the year 3,170,843
        if path.stat().st_mtime != 10**14:
            pytest.skip("this file system clamps file times")
        loaded = load_result_file(path)
    finally:
        path.unlink()
    assert loaded.modified is None and loaded.reports
