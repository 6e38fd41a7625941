"""A bank shared by several hosts is locked in AOE_RUNNER_BANK_LOCK_DIR (on the shared mount), seen by every host;
device locks stay in each host's own lock directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoe_runner.common.devlock import BankBusy, BankLock, DeviceLock, LockHolder


def test_bank_locks_meet_in_the_shared_directory_while_device_locks_stay_per_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bank = tmp_path / "nfs" / "bank"
    bank.mkdir(parents=True)
    monkeypatch.setenv("AOE_RUNNER_BANK_LOCK_DIR", str(tmp_path / "nfs" / "locks"))
    holder = LockHolder.here("test")
    monkeypatch.setenv("AOE_RUNNER_LOCK_DIR", str(tmp_path / "host-a"))
    with BankLock(bank).acquire(holder), DeviceLock(0).acquire(holder):
        monkeypatch.setenv("AOE_RUNNER_LOCK_DIR", str(tmp_path / "host-b"))
        with pytest.raises(BankBusy):
            BankLock(bank).acquire(holder)
        with DeviceLock(0).acquire(holder):  # host b's device 0 is another device
            pass
    assert [path.name.startswith("bank-") for path in (tmp_path / "nfs" / "locks").iterdir()] == [True]
