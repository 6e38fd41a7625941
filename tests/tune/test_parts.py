"""The pieces of `tune` that need no process: durations, log markers, the result watcher, bank inventories."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aoe_runner.common.quantities import parse_duration
from aoe_runner.errors import UsageError
from aoe_runner.runs.bank import changes_between, take_inventory
from aoe_runner.runs.blobs import BlobStore
from aoe_runner.tune import pipes, relay, supervisor
from aoe_runner.tune.markers import HINTS, MARKERS, MarkerScanner
from aoe_runner.tune.pipes import READ_PIECE, gather_below, read_unpolled_again, take_available
from aoe_runner.tune.relay import TerminalWriter
from aoe_runner.tune.signals import CountedSignals
from aoe_runner.tune.watch import ResultWatcher
from tests.conftest import SAMPLES
from tests.tune.runner import SIMULATOR, Home, aoe_runner, tune


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("500ms", 0.5), ("1.5 h", 5400), ("1d", 86400)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text, "--timeout") == seconds


@pytest.mark.parametrize("text", ["", "soon", "10x", "-5s", "0s", "90", "1h30", "1h and 2m", "m"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(UsageError, match="--timeout: "):
        parse_duration(text, "--timeout")


LOG = (
    b"step 1\nI1121 in tune mode, training graph handled by tools\nstep 2\n"
    b"[Aoe]MatMul_1 Tuning process finished.\n[Aoe]MatMul_2 Tuning process finished.\n"
    b"[Aoe]Aoe process finished,cost time 1109s.\n"
)


@given(st.lists(st.integers(min_value=0, max_value=len(LOG)), max_size=12))
def test_markers_are_counted_once_however_the_output_is_cut(cuts: list[int]) -> None:
    scanner = MarkerScanner()
    edges = [0, *sorted(cuts), len(LOG)]
    for start, end in zip(edges, edges[1:], strict=False):
        scanner.feed(LOG[start:end])
    seen = {marker.kind: (marker.count, marker.first_line) for marker in scanner.seen}
    assert seen == {
        "tuning_on": (1, "I1121 in tune mode, training graph handled by tools"),
        "operator_finished": (2, "[Aoe]MatMul_1 Tuning process finished."),
        "tuning_finished": (1, "[Aoe]Aoe process finished,cost time 1109s."),
    }


REVERSED = b"x Performance improved by 3%\ny Tuning process finished.\nz Aoe tuning graph\n"  # against the table's order


@given(st.lists(st.integers(min_value=0, max_value=len(REVERSED)), max_size=4))
def test_markers_are_named_in_the_order_the_output_has_them(cuts: list[int]) -> None:
    """A large read can hold several markers: they are still named (and recorded) in the order they came."""
    scanner = MarkerScanner()
    edges = [0, *sorted(cuts), len(REVERSED)]
    named = []
    for start, end in zip(edges, edges[1:], strict=False):
        scanner.feed(REVERSED[start:end])
        named += [marker.kind for marker in scanner.new]
        scanner.new.clear()

    assert [marker.kind for marker in scanner.seen] == ["tuning_finished", "operator_finished", "tuning_on"]
    assert named == ["tuning_finished", "operator_finished", "tuning_on"]


_PIECES = [pattern for _, pattern in MARKERS] + [pattern[:9] for _, pattern in MARKERS] + [b"\n", b"step 1 ", b"graph"]


@given(st.lists(st.sampled_from(_PIECES), max_size=30), st.lists(st.integers(min_value=0, max_value=1_500), max_size=8))
def test_markers_are_counted_as_a_whole_text_count_would_whatever_the_cuts(pieces: list[bytes], cuts: list[int]) -> None:
    """Chunks without any of HINTS are skipped without counting: that must never lose a marker, cut or whole."""
    assert all(any(hint in pattern for hint in HINTS) for _, pattern in MARKERS)
    text = b"".join(pieces)
    scanner = MarkerScanner()
    edges = [0, *sorted(min(cut, len(text)) for cut in cuts), len(text)]
    for start, end in zip(edges, edges[1:], strict=False):
        scanner.feed(text[start:end])
    expected: dict[str, int] = {}
    for kind, pattern in MARKERS:
        if count := text.count(pattern):
            expected[kind] = expected.get(kind, 0) + count
    assert {marker.kind: marker.count for marker in scanner.seen} == expected


def test_runs_show_lists_markers_in_the_order_of_a_run_whatever_order_they_arrived_in(tmp_path: Path) -> None:
    """AOE writes some markers to stdout and some to stderr: which pipe is read first is chance, the display is not."""
    home = Home(tmp_path)
    code, _, err = tune(home, "progress", "--reports", "2", "--lines", "1", "--interval", "0")
    assert code == 0, err
    (manifest_path,) = (tmp_path / "home" / "runs").glob("*/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    assert {marker["kind"] for marker in manifest["markers"]} == {"tuning_on", "operator_finished", "tuning_finished"}
    manifest["markers"].reverse()  # as if the pipes had been read the other way round
    manifest_path.write_text(json.dumps(manifest))

    shown = aoe_runner(home, "runs", "show", manifest["id"])

    assert shown.returncode == 0, shown.stderr
    kinds = [line.split()[1] for line in shown.stdout.splitlines() if line.startswith("  marker")]
    assert kinds == ["tuning_on", "operator_finished", "tuning_finished"]


def test_the_watcher_ignores_files_that_were_there_before_and_reads_growing_ones(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "aoe_data").mkdir(parents=True)
    old = next((SAMPLES / "training_opat").glob("*.json"))
    shutil.copy(old, work / old.name)
    watcher = ResultWatcher(work)
    assert not watcher.poll(force=True) and watcher.files == []

    live = work / "aoe_data" / "aoe_result_opat_20261121120000000_7.json"
    text = old.read_text()
    live.write_text(text[: len(text) // 2])  # half-written
    watcher.poll(force=True)
    partial = watcher.progress
    live.write_text(text)
    assert watcher.poll(force=True)
    assert watcher.progress.reports > partial.reports
    assert [watched.path for watched in watcher.files] == [live]


def test_bank_inventory_and_changes(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    (bank / "soc" / "cube").mkdir(parents=True)
    (bank / "soc" / "cube" / "a.bin").write_bytes(b"a")
    (bank / "soc" / "cube" / "b.bin").write_bytes(b"b")
    store = BlobStore(tmp_path / "home")
    before = take_inventory(bank, store)
    assert store.blob_path(before.by_path()["soc/cube/a.bin"].sha256).read_bytes() == b"a"
    (bank / "soc" / "cube" / "a.bin").write_bytes(b"A")
    (bank / "soc" / "cube" / "b.bin").unlink()
    (bank / "soc" / "unified_bank.json").write_text("{}")
    changes = changes_between(before, take_inventory(bank))
    assert (changes.added, changes.removed, changes.modified) == (
        ["soc/unified_bank.json"],
        ["soc/cube/b.bin"],
        ["soc/cube/a.bin"],
    )
    assert not take_inventory(tmp_path / "missing").exists


def test_a_work_dir_outside_the_record_is_copied_into_it(tmp_path: Path) -> None:
    home = Home(tmp_path)
    work = tmp_path / "shared-work"
    (work / "aoe_data").mkdir(parents=True)
    stale = work / "aoe_data" / "aoe_result_opat_20200101000000000_1.json"
    stale.write_text(json.dumps({}))
    code, _, err = tune(home, "progress", "--reports", "2", "--interval", "0", options=("--work-dir", str(work)))
    assert code == 0, err
    manifest = home.only_manifest()
    (result,) = manifest["result_files"]  # the file from an earlier run is not this run's
    assert result["recorded"].startswith("results/aoe_result_opat_") and result["source"].startswith(str(work))
    copy = tmp_path / "home" / "runs" / manifest["id"] / result["recorded"]
    assert copy.read_bytes() == Path(result["source"]).read_bytes()
    assert manifest["environment"]["ASCEND_WORK_PATH"] == str(work)


def test_a_release_and_its_inner_number_are_the_same_cann_and_other_releases_drift() -> None:
    from aoe_runner.runs.manifest import Fingerprint

    recorded_before = Fingerprint(cann_version="7.7.0.1.238", soc="Ascend910B3", python="3.11", hostname="h")
    recorded_now = Fingerprint(
        cann_version="8.1.RC1", cann_inner_version="7.7.0.1.238", soc="Ascend910B3", python="3.11", hostname="h"
    )
    upgraded = Fingerprint(
        cann_version="8.2.RC1", cann_inner_version="7.8.0.1.100", soc="Ascend910B3", python="3.11", hostname="h"
    )

    assert recorded_before.drift_from(recorded_now) == [] and recorded_now.drift_from(recorded_before) == []
    assert recorded_now.drift_from(upgraded) == ["CANN version 8.1.RC1 != 8.2.RC1"]
    assert recorded_before.drift_from(upgraded) == ["CANN version 7.7.0.1.238 != 8.2.RC1"]


def test_progress_counts_agree_with_their_nouns() -> None:
    from aoe_runner.runs.manifest import Progress

    assert Progress(reports=1, failures=1).describe() == "1 report, operators +0 added, 0 updated, 1 failure"
    assert Progress(reports=2).describe() == "2 reports, operators +0 added, 0 updated, 0 failures"


def test_a_pipe_that_could_not_be_widened_is_polled_and_read_without_pauses(tmp_path: Path) -> None:
    """Small reads of a widened pipe pause 2 ms so output gathers; a pipe that could not be widened (not Linux, or over
    the pipe quota) paused after most reads too, and the script waited out each pause: a flood ran at 20-30 MB/s.
    Such a pipe is polled, and read as soon as anything is in it."""
    assert gather_below(1 << 20) == 1 << 16  # a widened pipe: as measured in docs/benchmarks.md
    assert gather_below(1 << 16) == 0  # Linux's default pipe never pauses
    flood = ("--", "flood", str(16 << 20))
    assert _selector_use(tmp_path, widen=False, script=flood) == {"pipes polled": 2, "gathering waits": 0}


def test_a_widened_pipe_is_never_polled(tmp_path: Path) -> None:
    """Once a pipe has been polled, Linux 5.14+ wakes its pollers on every write: the script's one-line writes cost it
    about a fifth more CPU (docs/benchmarks.md). A widened pipe is read on a schedule instead, and still relays all."""
    flood = ("--", "flood", str(16 << 20))
    use = _selector_use(tmp_path, widen=True, script=flood)
    assert use["pipes polled"] == 0
    assert use["gathering waits"] > 0  # the flood was read in gathered pieces
    run_dir = next((tmp_path / "home" / "runs").iterdir())
    assert (run_dir / "log.txt").stat().st_size >= 16 << 20


@pytest.mark.parametrize(
    ("relayed", "waited", "next_wait"),
    [(1 << 20, 0.002, 0.0), (1 << 16, 0.05, 0.0), (100, 0.05, 0.002), (0, 0.0, 0.002), (0, 0.002, 0.004), (0, 0.032, 0.05)],
)
def test_unpolled_pipes_are_read_again_at_once_after_a_flood_soon_after_a_line_and_backing_off_when_quiet(
    relayed: int, waited: float, next_wait: float
) -> None:
    assert read_unpolled_again(relayed, 1 << 16, waited) == next_wait


def test_a_relay_takes_what_the_pipe_holds_in_pieces_up_to_its_limit_and_then_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Output is taken in READ_PIECE reads (a short hold of the pipe's lock for the script's writes), joined in order,
    at most READ_SIZE at a time; an empty pipe says so, and the end of file is still seen after the last piece."""
    limit = 4 * READ_PIECE  # less than Linux's widest unprivileged pipe, which must hold more than one relay takes
    monkeypatch.setattr(pipes, "READ_SIZE", limit)
    reads: list[int] = []
    real_read = os.read
    monkeypatch.setattr(supervisor.os, "read", lambda fd, size: reads.append(size) or real_read(fd, size))
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    fcntl.fcntl(read_end, fcntl.F_SETPIPE_SZ, 1 << 20)
    data = bytes(range(256)) * ((limit + READ_PIECE + 17) // 256) + b"end"
    with pytest.raises(BlockingIOError):
        take_available(read_end)
    assert os.write(write_end, data) == len(data)
    first = take_available(read_end)
    os.close(write_end)
    second = take_available(read_end)
    assert len(first) == limit and first + second == data
    assert take_available(read_end) == b""
    assert set(reads) == {READ_PIECE}
    os.close(read_end)


def _selector_use(tmp_path: Path, widen: bool, script: tuple[str, ...]) -> dict[str, int]:
    home = Home(tmp_path)
    command = ("tune", str(SIMULATOR), "--mode", "op", "--force", *script)
    done = subprocess.run(
        [sys.executable, "-c", SELECTOR_USE, "widen" if widen else "keep", *command],
        env=home.env,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.splitlines()[-1])


SELECTOR_USE = """
import atexit, io, json, selectors, sys
from aoe_runner.tune import pipes, relay
if sys.argv.pop(1) == "keep":
    pipes._F_SETPIPE_SZ = None  # as where a pipe cannot be widened
use = {"pipes polled": 0, "gathering waits": 0}
register, select = selectors.DefaultSelector.register, selectors.DefaultSelector.select
def counted_register(self, fileobj, events, data=None):
    use["pipes polled"] += isinstance(fileobj, io.BufferedReader)  # the script's stdout and stderr, not our own fds
    return register(self, fileobj, events, data)
def counted_select(self, timeout=None):
    use["gathering waits"] += timeout == pipes.BATCH_WAIT_S
    return select(self, timeout)
selectors.DefaultSelector.register, selectors.DefaultSelector.select = counted_register, counted_select
atexit.register(lambda: print(json.dumps(use), file=sys.__stderr__, flush=True))
sys.argv = ["aoe-runner", *sys.argv[1:]]
from aoe_runner.__main__ import main
sys.exit(main())
"""


def test_a_script_whose_name_is_not_utf8_is_run_recorded_listed_and_found(tmp_path: Path) -> None:
    """Its name reaches Python as a lone surrogate, which SQLite refused: a run recorded but never listed, exit 3."""
    home = Home(tmp_path)
    script = tmp_path / os.fsdecode(b"tr\xffain.py")
    shutil.copy(SIMULATOR, script)
    ran = aoe_runner(home, "tune", str(script), "--framework", "tf", "--mode", "op", "--force", "--", "exit", "0")
    assert ran.returncode == 0, ran.stderr
    listed = aoe_runner(home, "runs", "list", "--script", str(script))
    assert listed.returncode == 0 and "tr\\udcffain.py" in listed.stdout  # shown escaped, found by the name as given
    assert home.only_manifest()["script"] == str(script)  # the record keeps the exact name


def test_a_terminal_writer_counts_as_dropped_only_what_never_reached_the_reader_pipe() -> None:
    """A chunk that the reader's pipe took in part was counted whole as not shown ('30000060 bytes were not shown'
    when the reader had 65536 of them)."""
    read_end, write_end = os.pipe()
    try:
        capacity = fcntl.fcntl(write_end, 1032)  # F_GETPIPE_SZ: what the pipe takes before a write blocks
        writer = TerminalWriter(write_end, "stdout")
        assert writer.write(b"x" * (1 << 20))
        writer.close(wait_s=0.5)  # nobody reads: the pipe fills and the write blocks
        assert writer.dropped_bytes == (1 << 20) - capacity
        assert len(os.read(read_end, 1 << 21)) == capacity  # what was counted as shown is there to read
    finally:
        os.close(read_end)
        os.close(write_end)


def _written_by(writer: TerminalWriter, read_end: int) -> bytes:
    writer.close(wait_s=2.0)
    return os.read(read_end, 1 << 16)


def test_our_message_waits_for_the_line_the_script_has_begun_and_goes_right_after_it() -> None:
    """A notice landed inside a script line that the pipe had delivered in two pieces (a flaky walkthrough test)."""
    read_end, write_end = os.pipe()
    try:
        writer = TerminalWriter(write_end, "stdout")
        writer.write(b"step 1\nstep ")
        writer.say(b"aoe-runner: AOE tuning is on\n")
        writer.say(b"aoe-runner: second\n")
        writer.write(b"2 done\nstep 3")
        writer.write(b" done\n")
        writer.say(b"aoe-runner: at a line break\n")
        shown = _written_by(writer, read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert shown == (
        b"step 1\nstep 2 done\naoe-runner: AOE tuning is on\naoe-runner: second\nstep 3 done\naoe-runner: at a line break\n"
    )


@pytest.mark.parametrize("ending", ["after HOLD_S", "at close"])
def test_a_line_the_script_leaves_open_holds_our_message_only_so_long(ending: str) -> None:
    """A progress bar never ends its line: our message then goes on a line of its own, after HOLD_S or at the end."""
    read_end, write_end = os.pipe()
    try:
        writer = TerminalWriter(write_end, "stdout")
        writer.write(b"50%")
        started = time.monotonic()
        writer.say(b"aoe-runner: notice\n")
        if ending == "after HOLD_S":
            os.set_blocking(read_end, True)
            assert os.read(read_end, 100) == b"50%"
            assert os.read(read_end, 100) == b"\naoe-runner: notice\n"
            assert time.monotonic() - started >= relay.HOLD_S * 0.9
            writer.write(b"\r60%\n")
            assert _written_by(writer, read_end) == b"\r60%\n"
        else:
            assert _written_by(writer, read_end) == b"50%\naoe-runner: notice\n"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_tune_puts_its_notices_between_the_lines_of_a_script_that_writes_a_line_in_pieces(tmp_path: Path) -> None:
    """The end-to-end case, stdout and stderr one pipe (2>&1): the marker's notice waits for the line being written."""
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, time\n"
        "sys.stdout.write('I1121 in tune mode, training graph handled by tools\\nstep 1 of'); sys.stdout.flush()\n"
        "time.sleep(0.3)\n"
        "print(' 2 done', flush=True)\n"
    )
    home = Home(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "tune", str(script), "--framework", "tf", "--mode", "op", "--force"],
        env=home.env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout
    assert "step 1 of 2 done" in lines
    notice = next(line for line in lines if "AOE tuning is on" in line)
    assert notice.startswith("aoe-runner: ") and lines.index(notice) > lines.index("step 1 of 2 done")


def test_every_delivery_of_a_signal_is_counted_though_python_runs_its_handler_once() -> None:
    """A quick double Ctrl-C must read as two: CountedSignals counts the wakeup pipe's bytes, not handler calls.

    Deterministic: SIGINT is blocked in the main thread, so both deliveries reach a sleeping helper thread, whose C
    handler writes a byte each time; the main thread, in the kernel's wait for the sender (the sender checks its
    wchan), runs Python handlers only when its wait is over, once for both.
    """
    heard: list[int] = []
    helper = threading.Thread(target=time.sleep, args=(10,), daemon=True)  # created with SIGINT unblocked
    helper.start()
    with CountedSignals() as signals:
        signal.signal(signal.SIGINT, lambda signum, frame: heard.append(signum))  # a handler that counts, beside
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
        try:
            # once the main thread waits for it in the kernel (however long a busy machine takes to get there);
            # then again once the helper thread has taken the first (nothing pending), so that the kernel cannot merge
            # them; and the sender ends only once the second is taken too, while the main thread still blocks SIGINT
            pid, main = os.getpid(), threading.main_thread().native_id
            waiting = f'until [ "$(cat /proc/{pid}/task/{main}/wchan)" = do_wait ]; do sleep 0.01; done'
            taken = f"until grep -Eq '^ShdPnd:[[:space:]]*0+$' /proc/{pid}/status; do sleep 0.01; done"
            sender = f"{waiting}; kill -INT {pid}; {taken}; kill -INT {pid}; {taken}"
            assert subprocess.Popen(["sh", "-c", sender]).wait() == 0  # no timeout: that would poll, in Python
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        time.sleep(0)  # the main thread's Python handlers run here
        taken = signals.take()

    assert heard == [signal.SIGINT]  # what a handler that counted would have heard
    assert taken == [signal.SIGINT, signal.SIGINT]
