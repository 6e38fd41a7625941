"""Knowledge-bank inventories, the snapshot kept in a run record, and rolling a bank back to it.

Bank files are opaque (AOE.md §3): aoe-runner only lists, hashes and copies them, and writes into a
bank only on an explicit restore. A restore first copies every file it will replace or remove into a
backup directory, then replaces files one at a time by write-then-rename, so it can be interrupted
and run again, and loses nothing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from aoe_runner.errors import AoeRunnerError, ExitCode, InputError
from aoe_runner.runs.manifest import BankChanges, BankFile, BankInventory, RunManifest

_CHUNK = 1 << 20


class BankInUse(AoeRunnerError):
    """A live tuning run writes into the bank a restore would change."""

    exit_code = ExitCode.FINDING


def refuse_if_in_use(bank: Path, live_runs: list[RunManifest]) -> None:
    for run in live_runs:
        if Path(run.bank) == bank:
            raise BankInUse(f"{bank} is being tuned by run {run.id} (pid {run.supervisor_pid}); restore it when that run ends")


def take_inventory(directory: Path, snapshot_to: Path | None = None) -> BankInventory:
    """List, size and hash every file under directory; with snapshot_to, copy each file there in the same pass."""
    taken_at = datetime.now(timezone.utc)
    if not directory.is_dir():
        return BankInventory(directory=str(directory), exists=False, taken_at=taken_at)
    files = []
    for path in sorted(_walk(directory)):
        relative = path.relative_to(directory).as_posix()
        target = snapshot_to / relative if snapshot_to is not None else None
        try:
            size, digest = _hash_file(path, target)
        except FileNotFoundError:  # removed while we listed: it is not part of the bank any more
            continue
        except OSError as error:
            raise InputError(str(path), f"cannot read bank file: {error.strerror or error}") from None
        files.append(BankFile(path=relative, size=size, sha256=digest))
    return BankInventory(directory=str(directory), exists=True, files=files, taken_at=taken_at)


def changes_between(before: BankInventory, after: BankInventory) -> BankChanges:
    old, new = before.by_path(), after.by_path()
    return BankChanges(
        added=sorted(new.keys() - old.keys()),
        removed=sorted(old.keys() - new.keys()),
        modified=sorted(path for path in old.keys() & new.keys() if old[path].sha256 != new[path].sha256),
    )


@dataclass
class RestorePlan:
    bank: Path
    snapshot: Path
    write: list[str] = field(default_factory=list)  # copy from the snapshot: missing now, or different
    remove: list[str] = field(default_factory=list)  # not in the snapshot

    @property
    def empty(self) -> bool:
        return not (self.write or self.remove)


def plan_restore(before: BankInventory, snapshot: Path) -> RestorePlan:
    bank = Path(before.directory)
    current = take_inventory(bank).by_path()
    wanted = before.by_path()
    plan = RestorePlan(bank=bank, snapshot=snapshot)
    plan.write = sorted(path for path, file in wanted.items() if path not in current or current[path].sha256 != file.sha256)
    plan.remove = sorted(current.keys() - wanted.keys())
    missing = [path for path in plan.write if not (snapshot / path).is_file()]
    if missing:
        raise InputError(str(snapshot), f"the bank snapshot is incomplete: {missing[0]} is missing")
    return plan


def apply_restore(plan: RestorePlan, backup: Path) -> None:
    """Back up what will change, then make the bank equal to the snapshot."""
    for relative in plan.write + plan.remove:
        source = plan.bank / relative
        if source.is_file():
            _copy(source, backup / relative)
    plan.bank.mkdir(parents=True, exist_ok=True)
    for relative in plan.write:
        _replace_from(plan.snapshot / relative, plan.bank / relative)
    for relative in plan.remove:
        (plan.bank / relative).unlink(missing_ok=True)


def _walk(directory: Path) -> list[Path]:
    found = []
    for root, _dirs, names in os.walk(directory):
        found += [Path(root) / name for name in names if not os.path.islink(os.path.join(root, name))]
    return found


def _hash_file(path: Path, copy_to: Path | None) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as source:
        if copy_to is None:
            while chunk := source.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
            return size, digest.hexdigest()
        copy_to.parent.mkdir(parents=True, exist_ok=True)
        with open(copy_to, "wb") as target:
            while chunk := source.read(_CHUNK):
                digest.update(chunk)
                target.write(chunk)
                size += len(chunk)
    return size, digest.hexdigest()


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)


def _replace_from(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".restore", dir=target.parent)
    os.close(fd)
    try:
        shutil.copy2(source, temporary)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def sha256_of(path: Path) -> str:
    return _hash_file(path, None)[1]
