"""A report worker that dies costs time, never a hang or a file: real forked workers, really killed."""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from aoe_runner.report import api as reporting
from aoe_runner.report import sharing
from aoe_runner.report.api import merge_files
from aoe_runner.report.sharing import SharedFiles, WorkerFailed
from aoe_runner.report.summary_data import summary_of
from aoe_runner.results.files import find_result_files
from tests.conftest import ROOT  # noqa: E402

SAMPLES = ROOT / "sample_results"
from tests.conftest import DATA  # noqa: E402

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers are Linux's")


def result_paths() -> list[str]:
    paths, _ = find_result_files([str(SAMPLES), str(DATA)])
    return [os.fspath(path) for path in paths]


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.005)


def folded(parts: list[reporting.ChunkResult]) -> tuple[reporting.BankState, int]:
    state = parts[0][0]
    for part in parts[1:]:
        state.absorb(part[0])
    return state, sum(loaded for _, loaded, _, _ in parts)


class RecordedSharedFiles(SharedFiles):
    """SharedFiles that a test can reach from a worker, to take its lock."""

    made: list[SharedFiles] = []

    def __init__(self, paths: list[str]) -> None:
        super().__init__(paths)
        self.made.append(self)


def load_killing_the_worker(tmp_path: Path, how: str) -> object:
    """A `_load` under which the worker dies as `how` says once it has a file; the parent waits for that first."""
    parent, worker_has_one, load = os.getpid(), tmp_path / "worker-has-a-file", reporting._load

    def load_then_die(where: str, cache: object) -> object:
        if os.getpid() == parent:
            wait_for(worker_has_one)
            return load(where, cache)  # type: ignore[arg-type]
        worker_has_one.touch()
        if how == "holding the counter's lock":
            fcntl.lockf(RecordedSharedFiles.made[-1]._fd, fcntl.LOCK_EX)
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("not reached")

    return load_then_die


@pytest.mark.parametrize("how", ["after taking a file", "holding the counter's lock"])
def test_the_files_of_a_killed_worker_are_merged_again_in_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.setattr(reporting, "_load", load_killing_the_worker(tmp_path, how))
    monkeypatch.setattr(sharing, "SharedFiles", RecordedSharedFiles)
    parts = list(reporting._merge_parts(result_paths(), 3, None))

    state, loaded = folded(parts)
    monkeypatch.undo()
    serial, serial_count, _ = merge_files([Path(p) for p in result_paths()], workers=1)
    assert loaded == serial_count == 12
    assert summary_of(state).model_dump() == summary_of(serial).model_dump()


def test_a_worker_that_raises_fails_the_report_with_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    parent, load = os.getpid(), reporting._load

    def load_failing_in_a_worker(where: str, cache: object) -> object:
        if os.getpid() != parent:
            raise ZeroDivisionError("a bug in the worker")
        time.sleep(0.05)  # leave files for the worker
        return load(where, cache)  # type: ignore[arg-type]

    monkeypatch.setattr(reporting, "_load", load_failing_in_a_worker)
    with pytest.raises(WorkerFailed, match=r"^report worker 1 failed: ZeroDivisionError: a bug in the worker$") as failed:
        list(reporting._merge_parts(result_paths(), 2, None))
    assert "in load_failing_in_a_worker" in str(failed.value.__cause__)  # the worker's own traceback


def test_the_counter_hands_each_file_out_once_and_remembers_who_took_it() -> None:
    shared = SharedFiles(["a", "b", "c", "d"])
    try:
        first, second = shared.take(0), shared.take(3)
        assert [next(first), next(second), next(first)] == ["a", "b", "c"]
        assert list(second) == ["d"] and list(first) == []
        assert shared.not_taken_by({0}) == ["b", "d"]
        assert shared.not_taken_by({3}) == ["a", "c"]
        assert shared.not_taken_by({0, 3}) == []
    finally:
        shared.close()


DRIVER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from aoe_runner.report import api as reporting
    from aoe_runner.report import sharing
    from aoe_runner.__main__ import main

    parent, worker_file, load = os.getpid(), Path(sys.argv[1]), reporting._load

    def load_or_hang(where, cache):
        if os.getpid() != parent:
            worker_file.write_text(str(os.getpid()))
            time.sleep(3600)
        while not worker_file.exists():
            time.sleep(0.01)
        return load(where, cache)

    reporting._load = load_or_hang
    reporting.PARALLEL_MIN_BYTES = 0  # workers even for the small samples
    sys.argv = ["aoe-runner", "report", *sys.argv[2:], "--format", "json"]
    raise SystemExit(main())
    """
)


def test_a_report_whose_worker_is_killed_from_outside_finishes_with_the_whole_summary(tmp_path: Path) -> None:
    env = {**os.environ, "AOE_RUNNER_HOME": str(tmp_path / "home"), "AOE_RUNNER_CACHE": "off", "PYTHONPATH": str(ROOT)}
    inputs = [str(SAMPLES), str(DATA)]
    worker_file = tmp_path / "worker"
    report = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(worker_file), *inputs],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    wait_for(worker_file)
    time.sleep(0.1)  # the parent is past the file it waited on
    os.kill(int(worker_file.read_text()), signal.SIGKILL)
    out, err = report.communicate(timeout=60)

    serial = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "report", *inputs, "--format", "json"],
        capture_output=True,
        env=env,
        check=False,
    )
    assert (report.returncode, err) == (serial.returncode, serial.stderr)
    assert out == serial.stdout and b'"entries"' in out


def test_a_worker_killed_while_sending_its_result_loses_only_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The result is larger than the pipe holds, so the worker is in the middle of sending it when it is killed:
    the parent reads a message cut short, which is a dead worker like any other."""
    parent, load, pack, slept = os.getpid(), reporting._load, reporting._chunk_to_wire, []

    def slow_in_the_parent(where: str, cache: object) -> object:
        if os.getpid() == parent and not slept:
            slept.append(time.sleep(0.5))  # on its first file: the worker takes the others and finishes first
        return load(where, cache)  # type: ignore[arg-type]

    def packed_then_killed(chunk: reporting.ChunkResult) -> object:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGKILL)).start()
        as_msgpack, data, *rest = pack(chunk)
        return (as_msgpack, data + bytes(32 * 2**20), *rest)  # 32 MiB: sent in pieces the parent has to read

    monkeypatch.setattr(reporting, "_load", slow_in_the_parent)
    monkeypatch.setattr(reporting, "_chunk_to_wire", packed_then_killed)
    parts = list(reporting._merge_parts(result_paths(), 2, None))

    state, loaded = folded(parts)
    monkeypatch.undo()
    serial, serial_count, _ = merge_files([Path(p) for p in result_paths()], workers=1)
    assert loaded == serial_count
    assert summary_of(state).model_dump() == summary_of(serial).model_dump()


def test_a_worker_that_raises_fails_the_report_before_this_process_has_done_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parent, load, loads_here = os.getpid(), reporting._load, []

    def failing_in_the_worker(where: str, cache: object) -> object:
        if os.getpid() != parent:
            raise ZeroDivisionError("a bug in the worker")
        loads_here.append(where)
        time.sleep(0.1)
        return load(where, cache)  # type: ignore[arg-type]

    monkeypatch.setattr(reporting, "_load", failing_in_the_worker)
    with pytest.raises(WorkerFailed):
        list(reporting._merge_parts(result_paths(), 2, None))
    assert len(loads_here) < len(result_paths()) - 4  # it stopped early, not after every file but the worker's


def test_without_memory_for_the_counter_this_process_reads_every_file(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_memory(name: str, flags: int = 0) -> int:
        raise OSError(errno.ENOMEM, "Cannot allocate memory")

    monkeypatch.setattr(os, "memfd_create", no_memory)
    parts = list(reporting._merge_parts(result_paths(), 2, None))
    state, loaded = folded(parts)
    serial, serial_count, _ = merge_files([Path(p) for p in result_paths()], workers=1)
    assert len(parts) == 1 and loaded == serial_count
    assert summary_of(state).model_dump() == summary_of(serial).model_dump()


def test_more_workers_than_the_counter_can_name_is_refused() -> None:
    with pytest.raises(ValueError, match="workers must be from 2 to 255"):
        next(sharing.Sharing(list, list, list).run(["a", "b"], 256))
