"""The two locks of a tuning run, shared by every user of the host: its device and its knowledge bank.

`tune` and `verify` hold the device lock for the whole run; `tune` and `bank restore` hold the lock of the bank, keyed
by its resolved path, so a restore never runs while a tune takes its snapshot or writes into the bank, through
whichever symlink either of them reached it. How the locks are held, and why other users cannot break them, is in
aoe_runner.common.locks.
"""

from __future__ import annotations

import os
from pathlib import Path

from aoe_runner.common.lock_directory import LOCK_DIR_ENV, LockUnusable, lock_dir
from aoe_runner.common.locks import LockBusy, LockHolder, SharedLock

__all__ = [
    "LOCK_DIR_ENV",
    "BankBusy",
    "BankLock",
    "DeviceBusy",
    "DeviceLock",
    "LockHolder",
    "LockUnusable",
    "current_holder",
    "lock_dir",
]


class DeviceBusy(LockBusy):
    """Another run holds the device."""

    def __init__(self, device: int, holder: LockHolder | None) -> None:
        who = holder.describe() if holder else "a run that has not written its name yet"
        super().__init__(f"device {device} is being tuned by another run ({who})", holder)
        self.device = device


class BankBusy(LockBusy):
    """Another run tunes or restores the bank."""

    def __init__(self, bank: Path, holder: LockHolder | None) -> None:
        who = holder.describe() if holder else "a run that has not written its name yet"
        super().__init__(f"{bank} is in use by another aoe-runner ({who}); try again when it ends", holder)
        self.bank = bank


class DeviceLock(SharedLock):
    """Hold the lock of one device: `with DeviceLock(0).acquire(holder): ...`."""

    def __init__(self, device: int, directory: Path | None = None) -> None:
        super().__init__(f"device-{device}", directory)
        self.device = device

    def busy(self, holder: LockHolder | None) -> DeviceBusy:
        return DeviceBusy(self.device, holder)


BANK_LOCK_DIR_ENV = "AOE_RUNNER_BANK_LOCK_DIR"  # for banks shared by several hosts: a directory on the same NFSv4 mount


class BankLock(SharedLock):
    """Hold the lock of one bank directory, whatever path reaches it: `with BankLock(path).acquire(holder): ...`.

    With AOE_RUNNER_BANK_LOCK_DIR set (a directory every host mounts over NFSv4), bank locks live there, and their
    byte-range locks are seen by every host; device locks stay in the host's own lock directory.
    """

    def __init__(self, bank: Path, directory: Path | None = None) -> None:
        self.bank = Path(os.path.realpath(bank))
        shared = os.environ.get(BANK_LOCK_DIR_ENV)
        directory = directory or (Path(shared) if shared else None)
        import hashlib  # only a bank lock needs it: preflight and device locks start without it

        super().__init__(f"bank-{hashlib.sha256(os.fsencode(self.bank)).hexdigest()[:16]}", directory)

    def busy(self, holder: LockHolder | None) -> BankBusy:
        return BankBusy(self.bank, holder)


def current_holder(device: int, directory: Path | None = None) -> LockHolder | None:
    """Who holds the device now; None when nobody does. Raises LockUnusable when the lock cannot be trusted."""
    return DeviceLock(device, directory).holder()
