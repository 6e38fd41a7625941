"""What aoe-runner's own history holds, and what the next run will add to it, for the home-disk check.

The next run writes its record and log (RECORD_ALLOWANCE, a generous bound) and the bank contents the blob store
does not hold yet: the bank's size now, less what its newest inventory already stored (the store keeps each
content once). Both are measured by listing, never by reading files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from aoe_runner.common.home import bank_pointer
from aoe_runner.common.plain_data import FIELD_DOCSTRINGS

RECORD_ALLOWANCE = 64 << 20
_STORE_PARTS = ("runs", "blobs", "inventories", "banks", "verifications", "bank-backups")


@dataclass(kw_only=True)
class HistoryUse:
    __pydantic_config__ = FIELD_DOCSTRINGS

    home: str
    """The aoe-runner home (AOE_RUNNER_HOME, else the user data directory)."""
    held_bytes: int | None
    """What its run records, blobs and inventories hold now; None when not counted (tune and verify do not)."""
    next_run_bytes: int
    """What the next tuning run is expected to add: record, log and new blobs."""
    bank_bytes: int | None = None
    """The bank's size now, when it exists."""
    shares_home_filesystem: bool
    """On the same filesystem as the user's home (the disk check)."""
    free_bytes: int | None = None
    """Free space on the aoe-runner home's filesystem."""


def measure_history(runner_home: Path, bank: Path | None, user_home: Path, count_held: bool = True) -> HistoryUse:
    held = sum(_tree_size(runner_home / part) for part in _STORE_PARTS) if count_held else None
    bank_bytes = _tree_size(bank) if bank is not None and bank.is_dir() else None
    stored = _stored_bytes(runner_home, bank) if bank is not None and bank_bytes else 0  # no bank: nothing to add
    new_blobs = max(0, (bank_bytes or 0) - stored)
    where = _nearest_existing(runner_home)
    return HistoryUse(
        home=str(runner_home),
        held_bytes=held,
        next_run_bytes=RECORD_ALLOWANCE + new_blobs,
        bank_bytes=bank_bytes,
        shares_home_filesystem=_device(where) == _device(_nearest_existing(user_home)),
        free_bytes=_free(where),
    )


def _stored_bytes(runner_home: Path, bank: Path) -> int:
    """The size of the bank as its newest inventory stored it (0 when it was never inventoried)."""
    import json  # here: a host without a bank reads no inventory

    try:
        return int(json.loads(bank_pointer(runner_home, bank).read_text()).get("bytes", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0


def _tree_size(directory: Path) -> int:
    total = 0
    stack = [directory]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.is_dir():
            return candidate
    return Path("/")


def _device(path: Path) -> int:
    try:
        return os.stat(path).st_dev
    except OSError:
        return -1


def _free(path: Path) -> int | None:
    try:
        return os.statvfs(path).f_bavail * os.statvfs(path).f_frsize
    except OSError:
        return None
