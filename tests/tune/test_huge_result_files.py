"""A script that leaves a huge result file (20 GiB, sparse, starting as JSON) ends its run in seconds, in bounded
memory, with its exit code recorded and the file named in a warning; the good file beside it is kept (issue 42,
finding 2: it used to be read whole during the run, then copied and hashed whole after it)."""

from __future__ import annotations

import resource
import time

import pytest

from tests.tune.runner import Home, tune

pytestmark = pytest.mark.slow  # real tune runs writing huge and odd result files


def test_the_run_ends_with_its_outcome_and_the_huge_file_is_named(tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = Home(tmp_path)
    started = time.monotonic()
    code, _, err = tune(home, "huge-result", str(20 * 2**30))
    took = time.monotonic() - started
    manifest = home.only_manifest()
    assert code == 0 and manifest["status"] == "succeeded" and manifest["script_exit_code"] == 0, err
    assert took < 60
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 1024 * 1024  # KiB: under 1 GiB at its peak
    assert any("not kept in the run record: 20.0 GiB, more than a result file may have" in w for w in manifest["warnings"])
    kept = [result["source"] for result in manifest["result_files"]]
    assert [name.rsplit("/", 1)[-1] for name in kept] == ["aoe_result_opat_20261121120000001_2.json"]


def test_each_result_name_that_is_no_file_gets_one_warning(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 42, finding 11: a FIFO, a directory, a symbolic link loop or a link to /dev/zero named like a result file."""
    home = Home(tmp_path)
    code, _, err = tune(home, "odd-results")
    manifest = home.only_manifest()
    assert code == 0 and manifest["status"] == "succeeded", err
    expected = {
        "aoe_result_opat_fifo.json": "a FIFO, not a result file",
        "aoe_result_opat_dir.json": "a directory, not a result file",
        "aoe_result_opat_loop.json": "cannot be looked at (Too many levels of symbolic links)",
        "aoe_result_opat_zero.json": "a device file, not a result file",
    }
    for name, what in expected.items():
        found = [warning for warning in manifest["warnings"] if f"/{name}: {what}: not read" in warning]
        assert len(found) == 1, (name, manifest["warnings"])
        assert f"/{name}: {what}: not read" in err  # on screen too


def test_one_result_file_under_several_names_counts_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A file is one file however it is reached: a symbolic or hard link to a result file adds no reports."""
    home = Home(tmp_path)
    code, _, err = tune(home, "linked-results")
    manifest = home.only_manifest()
    assert code == 0, err
    assert [r["source"].rsplit("_", 1)[-1] for r in manifest["result_files"]] == ["1.json"]
    assert manifest["progress"]["reports"] == 1
    assert (
        sum("the same file as aoe_result_opat_20261121120000000_1.json (a link), counted once" in w for w in manifest["warnings"])
        == 2
    )


def test_a_sparse_result_file_stays_sparse_in_the_record(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A --work-dir outside the record: its result files are copied in, and a 300 MiB hole must not become 300 MiB."""
    home = Home(tmp_path)
    code, _, err = tune(home, "sparse-result", "300", options=("--work-dir", str(tmp_path / "elsewhere")))
    assert code == 0, err
    (result,) = home.only_manifest()["result_files"]
    copy = tmp_path / "home" / "runs" / home.only_manifest()["id"] / result["recorded"]
    assert copy.stat().st_size == 300 * 2**20 and copy.stat().st_blocks * 512 <= 2**20  # its one chunk of data
