"""`aoe-runner tune` against scripts that misbehave: every one ends with the right code, status, log and record.

Each test runs the real CLI in a subprocess on tests/simulator/train.py, and checks that no process of
the run is left behind and that the manifest and runs.db are intact.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import signal
import sqlite3
import subprocess
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import ROOT
from tests.tune.runner import (
    SIMULATOR,
    Home,
    aoe_runner,
    on_a_terminal,
    pid_when_written,
    pids_in,
    start_tune,
    tune,
    tune_command,
    wait_for_output,
    wait_until_gone,
)

pytestmark = pytest.mark.slow  # fault runs: scripts that crash, hang, flood or are killed, on pipes and a terminal


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


def run_dir(home: Home, manifest: dict) -> Path:
    return home.root / "home" / "runs" / manifest["id"]


def log_of(home: Home, manifest: dict) -> str:
    return (run_dir(home, manifest) / "log.txt").read_text()


def index_rows(home: Home) -> list[tuple]:
    with sqlite3.connect(home.root / "home" / "runs.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return db.execute("SELECT id, status, exit_code FROM runs ORDER BY started_at").fetchall()


def test_a_script_that_tunes_is_recorded_with_its_results_markers_and_bank(home: Home) -> None:
    code, out, err = tune(home, "progress", "--reports", "3", "--lines", "500", options=("--bank", "bank"))

    assert code == 0, err
    manifest = home.only_manifest()
    assert manifest["status"] == "succeeded" and manifest["exit_code"] == 0 and manifest["script_exit_code"] == 0
    assert out.count("step ") == 1500 and "in tune mode" in out  # relayed live, unchanged
    log = log_of(home, manifest)
    assert log.count("step ") == 1500 and "[Aoe]op_2 Tuning process finished." in log
    assert {m["kind"]: m["count"] for m in manifest["markers"]} == {"tuning_on": 1, "operator_finished": 3, "tuning_finished": 1}
    assert manifest["progress"] == {
        "reports": 3,
        "operators_added": 3,
        "operators_updated": 3,
        "subgraphs_added": 0,
        "subgraphs_updated": 0,
        "failures": 0,
    }
    (result,) = manifest["result_files"]
    assert result["reports"] == 3 and not result["partial"]
    assert (run_dir(home, manifest) / result["recorded"]).is_file()
    assert manifest["environment"]["AOE_MODE"] == "2"
    assert manifest["environment"]["TUNE_BANK_PATH"] == str(home.root / "bank")
    assert manifest["environment"]["ASCEND_WORK_PATH"] == str(run_dir(home, manifest) / "work")
    assert manifest["bank_changes"]["added"] == [f"Ascend910B3/cube/op_{i}.bin" for i in range(3)]
    assert manifest["preflight"]["forced"] is (bool(manifest["preflight"]["failed"]))
    assert index_rows(home) == [(manifest["id"], "succeeded", 0)]
    assert f"run {manifest['id']} succeeded, exit 0; 1 result file" in err
    schema = json.loads((ROOT / "schemas" / "run-manifest.schema.json").read_text())
    jsonschema.validate(manifest, schema)


def test_a_failing_script_passes_its_exit_code_through(home: Home) -> None:
    code, _, err = tune(home, "exit", "3")

    assert code == 3
    manifest = home.only_manifest()
    assert (manifest["status"], manifest["exit_code"], manifest["script_exit_code"]) == ("failed", 3, 3)
    assert "exiting with 3" in log_of(home, manifest) and "exiting with 3" in err
    assert index_rows(home) == [(manifest["id"], "failed", 3)]


def test_a_segfault_is_a_failure_named_by_its_signal(home: Home) -> None:
    code, _, _ = tune(home, "segfault")

    assert code == 128 + signal.SIGSEGV
    manifest = home.only_manifest()
    assert (manifest["status"], manifest["script_signal"], manifest["script_exit_code"]) == ("failed", "SIGSEGV", None)
    assert "about to crash" in log_of(home, manifest)


def test_a_result_file_killed_mid_write_keeps_every_complete_report(home: Home) -> None:
    code, _, _ = tune(home, "killed-mid-write")

    assert code == 128 + signal.SIGKILL
    manifest = home.only_manifest()
    by_name = {Path(r["recorded"]).name: r for r in manifest["result_files"]}
    complete, cut = by_name["aoe_result_opat_20261121120000000_1.json"], by_name["aoe_result_opat_20261121120000001_2.json"]
    assert (complete["reports"], complete["partial"]) == (1, False)
    assert (cut["reports"], cut["partial"]) == (2, True)
    assert manifest["progress"]["reports"] == 3
    report = aoe_runner(home, "report", "--run", manifest["id"], "--format", "json")
    assert report.returncode == 0
    totals = json.loads(report.stdout)["totals"]
    assert (totals["files"], totals["partial_files"], totals["reports"], totals["operators"]) == (2, 1, 3, 6)


def test_ctrl_c_stops_the_whole_group_and_records_an_interrupt(home: Home) -> None:
    pid_file = home.root / "pids"
    process = start_tune(home, "hang", "--pid-file", str(pid_file))
    wait_for_output(process, "ready")
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)

    assert process.returncode == 130
    manifest = home.only_manifest()
    assert (manifest["status"], manifest["stopped_by"], manifest["exit_code"]) == ("interrupted", "SIGINT", 130)
    assert wait_until_gone(pids_in(pid_file)) == []
    assert index_rows(home) == [(manifest["id"], "interrupted", 130)]


def test_a_script_that_ignores_sigterm_and_its_child_are_killed_after_the_grace_period(home: Home) -> None:
    pid_file = home.root / "pids"
    process = start_tune(home, "stubborn", "--pid-file", str(pid_file))
    wait_for_output(process, "ready")
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)

    assert process.returncode == 130
    pids = pids_in(pid_file)
    assert len(pids) == 2  # the script and the child it spawned
    assert wait_until_gone(pids) == []
    manifest = home.only_manifest()
    assert (manifest["status"], manifest["stopped_by"], manifest["script_signal"]) == ("interrupted", "SIGTERM", "SIGKILL")


def test_a_second_ctrl_c_kills_at_once_without_waiting_for_the_grace_period(home: Home) -> None:
    pid_file = home.root / "pids"
    process = start_tune(home, "stubborn", "--pid-file", str(pid_file), options=("--grace", "1h"))
    wait_for_output(process, "ready")
    process.send_signal(signal.SIGINT)
    # the kernel merges a signal with one still pending, so the second is sent once the first was heard
    said = wait_for_output(process, "stopping the script", stream="stderr")
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)  # an hour's grace would time this out

    assert process.returncode == 130
    assert wait_until_gone(pids_in(pid_file)) == []
    assert "SIGINT: stopping the script; whatever still runs gets SIGKILL in 1h (--grace), or at once at another signal" in said
    assert "SIGINT: killing the script now (SIGKILL)" in err


def test_a_signal_right_after_the_script_exited_is_recorded_as_late_not_lost(home: Home) -> None:
    """aoe-runner is stopped (as on a loaded machine) while the script exits; the signal comes strictly after."""
    pid_file = home.root / "pids"
    process = start_tune(home, "sleep", "0.5", "--pid-file", str(pid_file), options=("--grace", "1h"))
    wait_for_output(process, "recording to", stream="stderr")
    script = pid_when_written(pid_file, 30)
    assert pids_in(pid_file) == [script]
    script_exit = os.pidfd_open(script)
    try:
        process.send_signal(signal.SIGSTOP)
        select.select([script_exit], [], [], 30)
    finally:
        os.close(script_exit)
        process.send_signal(signal.SIGINT)
        process.send_signal(signal.SIGCONT)
    _, err = process.communicate(timeout=60)

    assert process.returncode == 0, err
    manifest = home.only_manifest()
    assert (manifest["status"], manifest["stopped_by"], manifest["late_signal"]) == ("succeeded", None, "SIGINT")
    assert "SIGINT arrived after the script ended; the run was recorded first" in err


def test_the_timeout_stops_the_script_with_124(home: Home) -> None:
    pid_file = home.root / "pids"
    code, _, err = tune(home, "hang", "--pid-file", str(pid_file), options=("--timeout", "1s"))

    assert code == 124
    manifest = home.only_manifest()
    assert (manifest["status"], manifest["stopped_by"], manifest["timeout_s"]) == ("timed_out", "timeout", 1.0)
    assert "timed_out (timeout), exit 124" in err
    assert "--timeout reached: stopping the script (SIGTERM); whatever still runs gets SIGKILL in 0.5s (--grace)" in err
    assert wait_until_gone(pids_in(pid_file)) == []


def test_a_second_run_on_the_same_device_is_refused_and_names_the_holder(home: Home) -> None:
    first = start_tune(home, "hang", options=("--device", "0"))
    wait_for_output(first, "ready")
    try:
        code, _, err = tune(home, "exit", "0", options=("--device", "0"))
        other_device = tune(home, "exit", "0", options=("--device", "1"))
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)

    assert code == 1
    assert "device 0 is being tuned by another run" in err and f"pid {first.pid} " in err and "aoe-runner tune" in err
    assert other_device[0] == 0
    statuses = sorted(m["status"] for m in home.manifests())
    assert statuses == ["interrupted", "succeeded"]  # the refused run left no record


def test_a_killed_supervisor_leaves_an_abandoned_run_and_no_orphan(home: Home) -> None:
    pid_file = home.root / "pids"
    process = start_tune(home, "hang", "--pid-file", str(pid_file))
    wait_for_output(process, "ready")
    process.kill()
    process.communicate(timeout=60)

    assert wait_until_gone(pids_in(pid_file)) == []
    listing = aoe_runner(home, "runs", "list")
    assert listing.returncode == 0
    assert " abandoned " in listing.stdout
    manifest = home.only_manifest()
    assert manifest["status"] == "abandoned"
    assert index_rows(home) == [(manifest["id"], "abandoned", None)]
    assert not (home.root / "home" / "runs" / manifest["id"] / ".reserve").exists()  # the room kept for its end is given back
    again = tune(home, "exit", "0")  # the dead run's device lock is gone with it
    assert again[0] == 0


def test_an_unwritable_home_is_a_clear_error_before_anything_is_launched(home: Home, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    pid_file = tmp_path / "pids"
    env = {**home.env, "AOE_RUNNER_HOME": str(blocker / "home")}
    result = subprocess.run(
        tune_command("hang", "--pid-file", str(pid_file)),
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 4
    assert result.stderr == f"error: {blocker / 'home'}: cannot record runs here: Not a directory (set AOE_RUNNER_HOME)\n"
    assert not pid_file.exists()


def test_a_failed_preflight_launches_nothing_without_force(home: Home) -> None:
    pid_file = home.root / "pids"
    result = aoe_runner(home, "tune", str(SIMULATOR), "--mode", "op", "--", "exit", "0", "--pid-file", str(pid_file))
    if result.returncode == 0:
        pytest.skip("this host passes preflight")
    assert result.returncode == 1
    assert "preflight failed (" in result.stderr and "nothing was launched" in result.stderr
    assert not pid_file.exists() and home.manifests() == []


def test_the_log_holds_the_exact_bytes_the_script_wrote(home: Home) -> None:
    code, out, _ = tune(home, "flood", str(3 * 2**20))

    assert code == 0
    log = (run_dir(home, home.only_manifest()) / "log.txt").read_bytes()
    assert len(log) >= 3 * 2**20 and log == out.encode()
    assert os.path.getsize(run_dir(home, home.only_manifest()) / "log.txt") == len(log)


def test_a_bank_being_tuned_is_not_restored(home: Home) -> None:
    assert tune(home, "progress", "--reports", "1", "--interval", "0", options=("--bank", "bank"))[0] == 0
    finished = home.only_manifest()["id"]
    live = start_tune(home, "hang", options=("--bank", "bank"))
    wait_for_output(live, "ready")
    try:
        refused = aoe_runner(home, "bank", "restore", finished)
    finally:
        live.send_signal(signal.SIGINT)
        live.communicate(timeout=60)
    running = next(m for m in home.manifests() if m["id"] != finished)  # interrupted by now
    assert refused.returncode == 1
    assert refused.stderr.startswith(  # named as a device's holder is: user, pid, host, start time and command
        f"error: {home.root / 'bank'} is being tuned by run {running['id']} (user {running['facts']['user']}, "
        f"pid {running['supervisor_pid']} on {running['facts']['hostname']}, since "
    )
    assert f": aoe-runner tune {running['script']} hang (run {running['id']})); restore it when that run ends" in refused.stderr
    assert (home.root / "bank" / "Ascend910B3" / "cube" / "op_0.bin").exists()


def test_on_a_terminal_progress_is_a_status_line_cleared_before_the_scripts_output(home: Home) -> None:
    code, seen = on_a_terminal(tune_command("progress", "--reports", "3", "--interval", "1.2"), home.env, home.root)

    assert code == 0
    status_lines = re.findall(rb"aoe-runner: (\d) reports, operators", seen)
    assert status_lines and status_lines[-1] == b"3"
    assert b"\r\x1b[K" in seen  # the status line is erased before anything else is written


def test_the_git_commit_of_the_scripts_repository_is_recorded(home: Home) -> None:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    assert tune(home, "exit", "0")[0] == 0
    manifest = home.only_manifest()
    assert manifest["git_commit"] == head.stdout.strip()
    assert manifest["script_sha256"] == hashlib.sha256(SIMULATOR.read_bytes()).hexdigest()
