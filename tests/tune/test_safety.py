"""A tuning run is sacred: hostile files, blocked readers, signals at the worst moment, full and
read-only disks, broken records and escaping processes never kill the script or lose its outcome.

Real `aoe-runner tune` processes on tests/simulator/train.py; real tmpfs mounts where a disk must fill up or
turn read-only (root only: CI runs as root).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.tune.runner import (
    Home,
    aoe_runner,
    pid_when_written,
    pids_in,
    start_tune,
    tune,
    wait_for_output,
    wait_until_gone,
)

pytestmark = pytest.mark.slow  # long fault runs: floods, timeouts, hostile files written live
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 6 MiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def hostile_result_files(directory: Path) -> Path:
    """One file for each kind of input that used to crash the reader (class 1)."""
    directory.mkdir()
    operator = '{"op_name":"%s","op_type":"MatMul","tune_performance":{"Schedule":{"performance_after_tune(us)":%s,"performance_before_tune(us)":20,"update_mode":"add"}}}'

    def report(op_name: str = "op", after: str = "10") -> bytes:
        body = '{"report_20261121120000000_1":[{"basic":{"tuning_name":"t"}},{"OPAT":{"opat_tuning_result":"tuning successful","repo_modified_operators":[%s]}}]}'
        return (body % (operator % (op_name, after))).encode()

    files = {
        "invalid-utf8": report().replace(b'"tuning_name":"t"', b'"tuning_name":"caf\xe9"'),
        "deep": b'{"report_20261121120000000_1":' + b"[" * 5000 + b"]" * 5000 + b"}",
        "huge-int": report(after="1" + "0" * 400),
        "long-int": report(after="7" * 5000),
        "surrogate": report(op_name="\\ud800"),
        "cut-in-key": report()[:-1] + b',"report_2026112112000',
        "negative": report(after="-5"),
        "not-json": b"\x00\xff garbage",
    }
    for name, data in files.items():
        (directory / name).write_bytes(data)
    return directory


def test_hostile_result_files_written_live_never_harm_the_script(home: Home) -> None:
    hostile = hostile_result_files(home.root / "hostile")

    code, out, err = tune(home, "hostile-results", str(hostile), "--interval", "0.2")

    assert code == 0, err
    assert "survived every file" in out
    manifest = home.only_manifest()
    assert manifest["status"] == "succeeded" and manifest["script_exit_code"] == 0
    assert "internal error" not in err and "Traceback" not in err
    unreadable = [result for result in manifest["result_files"] if result["error"]]
    assert unreadable, manifest["result_files"]  # "not-json" at least
    for result in unreadable:  # one warning each, on screen and in the manifest
        said = [warning for warning in manifest["warnings"] if warning.startswith(f"{result['source']}: ")]
        assert len(said) == 1 and result["error"] in said[0], manifest["warnings"]
        assert err.count(f"warning: {said[0]}") == 1, err
    shown = aoe_runner(home, "runs", "show", "latest").stdout
    assert all(f"{result['recorded']}: not read: {result['error']}" in shown for result in unreadable), shown


BLOCKING_SCRIPT = """
import sys, time
sys.stdout.buffer.write(b"x" * (8 << 20) + b"\\n")
sys.stdout.flush()
print("all written", file=sys.stderr, flush=True)
time.sleep(3600)
"""


def _blocking_tune(home: Home) -> list[str]:
    """`aoe-runner tune` of a script that writes more to stdout than a pipe holds."""
    script = home.root / "blocking.py"
    script.write_text(BLOCKING_SCRIPT)
    return [sys.executable, "-m", "aoe_runner", "tune", str(script), "--framework", "tf", "--mode", "op", "--force"]


def test_the_timeout_holds_while_nobody_reads_stdout(home: Home) -> None:
    command = [*_blocking_tune(home), "--timeout", "2s", "--grace", "0.5s"]
    started = time.monotonic()
    process = subprocess.Popen(command, env=home.env, cwd=home.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = b""
    try:
        _, err = _communicate_without_reading_stdout(process, timeout_s=30)
    finally:
        process.kill()
    took = time.monotonic() - started

    assert process.returncode == 124, err
    assert took < 12, f"took {took:.1f} s"
    manifest = home.only_manifest()
    assert manifest["status"] == "timed_out"
    log = home.root / "home" / "runs" / manifest["id"] / "log.txt"
    assert log.read_bytes().count(b"x") == 8 << 20  # the log got every byte
    assert b"stdout was not being read" in err
    assert any("stdout was not being read" in warning for warning in manifest["warnings"])


def test_sigterm_is_served_while_nobody_reads_stdout(home: Home) -> None:
    command = [*_blocking_tune(home), "--grace", "0.5s"]
    process = subprocess.Popen(command, env=home.env, cwd=home.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for_stderr(process, b"all written")
        process.send_signal(signal.SIGTERM)
        _, err = _communicate_without_reading_stdout(process, timeout_s=15)
    finally:
        process.kill()

    assert process.returncode == 130, err
    assert home.only_manifest()["stopped_by"] == "SIGTERM"


def test_sigterm_before_the_script_starts_cancels_cleanly_with_130(home: Home) -> None:
    fake_tools = home.root / "bin"
    fake_tools.mkdir()
    slow_npu_smi = fake_tools / "npu-smi"
    slow_npu_smi.write_text("#!/bin/sh\nsleep 30\n")
    slow_npu_smi.chmod(0o755)
    pid_file = home.root / "pids"
    env = {**home.env, "PATH": f"{fake_tools}:{os.environ['PATH']}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "aoe_runner", "tune", str(Path(__file__).parent.parent / "simulator" / "train.py")]
        + ["--mode", "op", "--force", "--", "exit", "0", "--pid-file", str(pid_file)],
        env=env,
        cwd=home.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    runs = home.root / "home" / "runs"
    deadline = time.monotonic() + 20
    while not (runs.is_dir() and any(runs.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.02)  # the run directory exists: preflight is asking the slow npu-smi
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=20)

    assert process.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert list(runs.iterdir()) == []  # no half-made record, no partial snapshot
    assert not pid_file.exists()


def test_a_signal_after_the_script_exited_keeps_its_success(home: Home) -> None:
    pid_file = home.root / "pids"
    process = start_tune(home, "leave-stubborn", "--pid-file", str(pid_file), options=("--grace", "20s"))
    wait_for_output(process, "leaving a child behind")
    script, deadline = pid_when_written(pid_file), time.monotonic() + 60
    while psutil.pid_exists(script):  # gone once aoe-runner has reaped it: it saw the exit, and waits for the child
        assert time.monotonic() < deadline, "the script did not end"
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=20)

    assert process.returncode == 0, err
    manifest = home.only_manifest()
    assert manifest["status"] == "succeeded" and manifest["stopped_by"] is None
    assert manifest["late_signal"] == "SIGTERM"
    assert wait_until_gone(pids_in(pid_file)) == []
    assert "arrived after the script ended" in err
    assert "SIGTERM: the script has exited; killing what it left running now" in err


def test_a_setsid_daemon_started_by_the_script_is_stopped_and_named(home: Home) -> None:
    pid_file = home.root / "pids"

    code, _, err = tune(home, "daemon", "--pid-file", str(pid_file))

    assert code == 0, err
    script_pid, daemon_pid = pids_in(pid_file)
    assert wait_until_gone([daemon_pid]) == []
    manifest = home.only_manifest()
    assert any(f"pid {daemon_pid} " in leftover for leftover in manifest["leftover_processes"])
    assert f"pid {daemon_pid} " in err and "left processes running" in err


def test_a_child_ending_just_after_the_script_is_not_left_behind(home: Home) -> None:
    """The end is looked at as soon as the script exits, but what ends with it is not named a leftover."""
    pid_file = home.root / "pids"

    code, _, err = tune(home, "brief-child", "--pid-file", str(pid_file))

    assert code == 0, err
    assert Path(f"{pid_file}.child-ready").exists()  # the child did run
    manifest = home.only_manifest()
    assert manifest["status"] == "succeeded" and manifest["leftover_processes"] == []
    assert "left processes running" not in err


def test_what_a_killed_supervisor_leaves_behind_is_ended_by_its_watchdog(home: Home) -> None:
    """SIGKILL of aoe-runner: the script dies with it (PDEATHSIG), and the watchdog (tune/watchdog.py) ends what the
    script started, so the device is free for the next run (issue 42, finding 4)."""
    pid_file = home.root / "pids"
    process = start_tune(home, "grandchild", "--pid-file", str(pid_file))
    wait_for_output(process, "ready")
    deadline = time.monotonic() + 30
    while len(pids_in(pid_file)) < 2 and time.monotonic() < deadline:  # the script's, then its grandchild's
        time.sleep(0.05)
    process.kill()  # SIGKILL: no clean-up of ours runs
    process.wait()
    try:
        assert wait_until_gone(pids_in(pid_file) + _orphans_of(pid_file)) == []  # the forked middle process too
        code, _, err = tune(home, "exit", "0")
        assert code == 0, err
    finally:
        for pid in pids_in(pid_file) + _orphans_of(pid_file):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@needs_root
def test_a_disk_that_fills_up_during_the_run_keeps_the_outcome(home: Home, small_disk: Path) -> None:
    env_home = Home(home.root)
    runner_home = small_disk / "home"
    env = {**env_home.env, "AOE_RUNNER_HOME": str(runner_home)}
    process = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "tune", str(Path(__file__).parent.parent / "simulator" / "train.py")]
        + ["--mode", "op", "--force", "--", "fill-disk", str(small_disk / "filler")],
        env=env,
        cwd=home.root,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert process.returncode == 0, process.stderr
    assert "internal error" not in process.stderr
    (manifest_path,) = runner_home.glob("runs/*/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    assert manifest["status"] == "succeeded" and manifest["exit_code"] == 0
    listed = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "runs", "list", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout.splitlines()[0])["status"] == "succeeded"


@needs_root
def test_the_history_reads_on_a_read_only_home(home: Home, small_disk: Path) -> None:
    env = {**home.env, "AOE_RUNNER_HOME": str(small_disk / "home")}
    first = subprocess.run(
        _tune_argv("progress", "--reports", "1", "--interval", "0"), env=env, cwd=home.root, capture_output=True
    )
    assert first.returncode == 0, first.stderr
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)

    for argv in (["runs", "list"], ["runs", "show", "latest"], ["report", "--run", "latest"]):
        result = subprocess.run([sys.executable, "-m", "aoe_runner", *argv], env=env, capture_output=True, text=True)
        assert result.returncode == 0, (argv, result.stderr)
        assert "internal error" not in result.stderr


def test_a_broken_manifest_is_a_warning_and_the_rest_of_the_history_stays(home: Home) -> None:
    for _ in range(3):
        assert tune(home, "progress", "--reports", "1", "--interval", "0")[0] == 0
    oldest, middle, newest = home.manifests()
    broken = home.root / "home" / "runs" / middle["id"] / "manifest.json"
    broken.write_text('{"id": "truncated')
    (home.root / "home" / "runs.db").unlink()  # the index is rebuilt from the manifests

    listed = aoe_runner(home, "runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == [newest["id"], oldest["id"]]
    assert str(broken) in listed.stderr and "warning:" in listed.stderr

    compared = aoe_runner(home, "report", "--diff")
    assert compared.returncode == 0, compared.stderr
    assert f"comparing run {oldest['id']} (old) with run {newest['id']} (new)" in compared.stderr


@pytest.mark.parametrize("damage", ["empty", "garbage", "a damaged page"])
def test_an_empty_garbage_or_damaged_index_is_rebuilt_from_the_manifests(home: Home, damage: str) -> None:
    """A damaged page past the header (the file opens, its table is listed) was 'database disk image is malformed'
    on every command (exit 3), and tune refused to start."""
    for _ in range(2):
        assert tune(home, "exit", "0")[0] == 0
    database = home.root / "home" / "runs.db"
    with sqlite3.connect(database) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for suffix in ("-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    if damage == "a damaged page":
        data = bytearray(database.read_bytes())
        page = int.from_bytes(data[16:18], "big")
        assert len(data) >= 2 * page
        data[page : 2 * page] = b"\xff" * page  # page 2: the runs table's
        database.write_bytes(bytes(data))
    else:
        database.write_bytes(b"" if damage == "empty" else b"this is not a database" * 100)

    listed = aoe_runner(home, "runs", "list", "--json")

    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == 2
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (2,)


def _tune_argv(*script_args: str) -> list[str]:
    simulator = Path(__file__).parent.parent / "simulator" / "train.py"
    return [sys.executable, "-m", "aoe_runner", "tune", str(simulator), "--mode", "op", "--force", "--", *script_args]


def _communicate_without_reading_stdout(process: subprocess.Popen[bytes], timeout_s: float) -> tuple[None, bytes]:
    """Wait for the process while reading only its stderr: its stdout pipe fills up and stays full."""
    assert process.stderr is not None
    err = b""
    deadline = time.monotonic() + timeout_s
    os.set_blocking(process.stderr.fileno(), False)
    while process.poll() is None and time.monotonic() < deadline:
        err += _read_available(process.stderr.fileno())
        time.sleep(0.05)
    err += _read_available(process.stderr.fileno())
    if process.returncode is None:
        raise AssertionError(f"still running after {timeout_s} s; stderr: {err!r}")
    return None, err


def _wait_for_stderr(process: subprocess.Popen[bytes], text: bytes, timeout_s: float = 30) -> None:
    assert process.stderr is not None
    seen = b""
    deadline = time.monotonic() + timeout_s
    os.set_blocking(process.stderr.fileno(), False)
    while text not in seen:
        if time.monotonic() > deadline:
            raise AssertionError(f"no {text!r} on stderr within {timeout_s} s: {seen!r}")
        seen += _read_available(process.stderr.fileno())
        time.sleep(0.02)


def _read_available(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 20)
    except BlockingIOError:
        return b""


def _orphans_of(pid_file: Path) -> list[int]:
    """The simulator's forked middle process, which writes no pid file: found by its command line."""
    import psutil

    return [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if "grandchild" in " ".join(p.info["cmdline"] or []) and p.pid != os.getpid()
    ]
