"""-v: more detail, the same result; it and -q exclude each other."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, ROOT, SAMPLES

SMALL = DATA / "facts" / "small-2c.json"


def test_verbose_preflight_shows_every_check_as_preflight_v_does(cli) -> None:  # type: ignore[no-untyped-def]
    short, every = cli("preflight", "--facts", str(SMALL)).out, cli("-v", "preflight", "--facts", str(SMALL)).out
    assert every == cli("preflight", "--facts", str(SMALL), "-v").out
    assert "formulas:" in every and "formulas:" not in short
    assert "pass " in every and "pass " not in short


def test_verbose_says_which_store_and_what_was_read(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("AOE_RUNNER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AOE_RUNNER_STORE", raising=False)
    listed = cli("-v", "runs", "list")
    assert listed.err == f"run store: this host's history in {tmp_path / 'home'}\n"
    assert cli("runs", "list").err == ""
    loud, plain = cli("-v", "report", str(SAMPLES)), cli("report", str(SAMPLES))
    assert loud.out == plain.out
    assert loud.err == plain.err + "read 6 result files (8 reports); 0 not read\n"


def test_quiet_and_verbose_together_are_a_usage_error(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("-q", "-v", "report", str(SAMPLES))
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith("error: -q and -v ask for less and more: give one of them")


def test_verbose_tune_refused_by_preflight_shows_every_check(tmp_path: Path) -> None:
    import subprocess

    script = tmp_path / "train.py"
    script.write_text("print('never run')\n")
    env = {"AOE_RUNNER_HOME": str(tmp_path / "home"), "AOE_RUNNER_LOCK_DIR": str(tmp_path / "locks"), "PATH": "/usr/bin:/bin"}
    argv = [sys.executable, "-m", "aoe_runner", "tune", str(script), "--framework", "tf", "--mode", "op"]  # no NPU here: refused
    short = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    every = subprocess.run([*argv[:3], "-v", *argv[3:]], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert short.returncode == every.returncode == 1, short.stderr  # a failed check: a finding
    assert "formulas:" in every.stderr and "formulas:" not in short.stderr
    assert "never run" not in short.stdout + every.stdout
