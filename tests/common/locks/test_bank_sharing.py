"""Tuning runs may share a bank, as AOE allows; a restore never runs beside them, nor they beside a restore."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from aoe_runner.common.devlock import BankBusy, BankLock, LockHolder
from tests.tune.runner import Home, aoe_runner, start_tune, tune, wait_for_output


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


def test_two_tuning_runs_share_a_bank_and_a_restore_waits_for_both(home: Home) -> None:
    bank = str(home.root / "bank")
    first = start_tune(home, "hang", options=("--bank", bank, "--device", "0"))
    try:
        wait_for_output(first, "ready")
        second, _, err = tune(home, "exit", "0", options=("--bank", bank, "--device", "1"))
        running_id = next(m["id"] for m in home.manifests() if m["status"] == "running")
        restore = aoe_runner(home, "bank", "restore", running_id)
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)

    assert second == 0, err
    assert "another run tunes" in err and "bank changes will include what that run writes" in err
    assert restore.returncode == 1 and f"is being tuned by run {running_id}" in restore.stderr
    assert aoe_runner(home, "bank", "restore", running_id).returncode == 0  # both runs over: the restore goes ahead


HOLD_EXCLUSIVE = """
import sys, time
from pathlib import Path
from aoe_runner.common.devlock import BankLock, LockHolder
BankLock(Path(sys.argv[1])).acquire(LockHolder.here("aoe-runner bank restore (backing up)"))
print("held", flush=True)
time.sleep(60)
"""


def test_a_tuning_run_is_refused_while_a_restore_holds_the_bank(home: Home) -> None:
    bank = home.root / "bank"
    bank.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_EXCLUSIVE, str(bank)], env=home.env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        code, _, err = tune(home, "exit", "0", options=("--bank", str(bank)))
    finally:
        holder.kill()
        holder.wait()

    assert code == 1 and "aoe-runner bank restore (backing up)" in err
    assert home.manifests() == []


def test_shared_holders_coexist_and_exclude_an_exclusive_one(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    first = BankLock(tmp_path / "bank", locks).acquire(LockHolder.here("tune A"), shared=True)
    second = BankLock(tmp_path / "bank", locks).acquire(LockHolder.here("tune B"), shared=True)
    with pytest.raises(BankBusy):
        BankLock(tmp_path / "bank", locks).acquire(LockHolder.here("restore"))
    first.release()
    with pytest.raises(BankBusy):
        BankLock(tmp_path / "bank", locks).acquire(LockHolder.here("restore"))
    second.release()
    BankLock(tmp_path / "bank", locks).acquire(LockHolder.here("restore")).release()
