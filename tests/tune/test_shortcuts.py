"""Shortcuts that mean what the user means after many runs: `latest`, the default diff pair, `--script`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tune.runner import SIMULATOR, Home, aoe_runner


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


def tune_script(home: Home, script: Path, *script_args: str) -> int:
    command = [sys.executable, "-m", "aoe_runner", "tune", str(script), "--mode", "op", "--force", "--grace", "0.5s"]
    command += ["--bank", str(home.root / "bank"), "--", *script_args]
    return subprocess.run(command, env=home.env, cwd=home.root, capture_output=True, timeout=120).returncode


def copy_of_simulator(home: Home, relative: str) -> Path:
    target = home.root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(SIMULATOR, target)
    return target


def verify(home: Home) -> subprocess.CompletedProcess[str]:
    """One baseline and one tuned run of the simulator printing step times, against the bank of the tuning runs."""
    return aoe_runner(home, "verify", str(SIMULATOR), "--bank", str(home.root / "bank"), "--repeats", "1", "--", "steps", "12")


def listed(home: Home, *options: str) -> list[dict]:
    result = aoe_runner(home, "runs", "list", "--json", *options)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_latest_means_the_latest_tuning_run_where_a_tuning_run_is_needed(home: Home) -> None:
    assert tune_script(home, SIMULATOR, "progress", "--reports", "1", "--interval", "0") == 0
    verified = verify(home)
    assert verified.returncode == 0, verified.stderr
    assert listed(home, "--limit", "1")[0]["kind"] == "verify"  # the newest run is a verify run

    report = aoe_runner(home, "report", "--run", "latest", "--format", "json")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["totals"]["reports"] == 1
    restore = aoe_runner(home, "bank", "restore", "latest", "--dry-run")
    assert restore.returncode == 0, restore.stderr
    assert "remove  Ascend910B3/cube/op_0.bin" in restore.stdout  # the tuning run's bank change, not the verify run's
    shown = aoe_runner(home, "runs", "show", "latest", "--json")
    assert json.loads(shown.stdout)["kind"] == "verify"  # runs show: the newest run of any kind


def test_runs_list_filters_by_kind(home: Home) -> None:
    assert tune_script(home, SIMULATOR, "progress", "--reports", "1", "--interval", "0") == 0
    assert verify(home).returncode == 0

    assert [row["kind"] for row in listed(home, "--kind", "tune")] == ["tune"]
    assert [row["kind"] for row in listed(home, "--kind", "verify")] == ["verify", "verify"]
    bad = aoe_runner(home, "runs", "list", "--kind", "bogus")
    assert bad.returncode == 2 and "--kind" in bad.stderr


def test_the_default_diff_compares_the_last_two_succeeded_tuning_runs(home: Home) -> None:
    for _ in range(2):
        assert tune_script(home, SIMULATOR, "progress", "--reports", "1", "--interval", "0") == 0
    assert tune_script(home, SIMULATOR, "killed-mid-write") == 137  # failed, yet it has result files
    older, newer, failed = home.manifests()
    assert failed["status"] == "failed" and failed["result_files"]

    result = aoe_runner(home, "report", "--diff")

    assert result.returncode == 0, result.stderr
    assert f"comparing run {older['id']} (old) with run {newer['id']} (new)" in result.stderr


def test_the_default_diff_stays_within_the_named_script(home: Home) -> None:
    first = copy_of_simulator(home, "a/train.py")
    second = copy_of_simulator(home, "b/other.py")
    for script in (first, first, second, second):
        assert tune_script(home, script, "progress", "--reports", "1", "--interval", "0") == 0
    a1, a2, _, _ = home.manifests()

    result = aoe_runner(home, "report", "--diff", "--script", str(first))

    assert result.returncode == 0, result.stderr
    assert f"comparing run {a1['id']} (old) with run {a2['id']} (new)" in result.stderr
    lonely = aoe_runner(home, "report", "--diff", "--script", "missing.py")
    assert lonely.returncode == 4 and "no succeeded tuning run of missing.py" in lonely.stderr


def test_script_filters_match_a_path_exactly_and_a_bare_name_by_name_only(home: Home) -> None:
    scripts = [copy_of_simulator(home, name) for name in ("a/train.py", "b/train.py", "a/t_ain.py", "a/TRAIN.py")]
    for script in scripts:
        assert tune_script(home, script, "exit", "0") == 0
    by_path = {row["script"] for row in listed(home, "--script", str(scripts[0]))}
    by_name = {row["script"] for row in listed(home, "--script", "train.py")}

    assert by_path == {str(scripts[0])}
    assert by_name == {str(scripts[0]), str(scripts[1])}  # not t_ain.py (no wildcards), not TRAIN.py (case counts)
    assert listed(home, "--script", "%.py") == []
