"""Rolling a knowledge bank back to its state before a tuning run (`aoe-runner bank restore`).

A restore first copies every file it will replace or remove into a backup directory, then replaces files
one at a time by write-then-rename (checking each against its recorded sha256 and giving it its recorded
mode), removes what the run added, and the directories it created once they are empty; it can be
interrupted and run again, and loses nothing. Nothing inside the bank is followed (bank.py opens every path
one component at a time with O_NOFOLLOW).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from aoe_runner.errors import AoeRunnerError, ExitCode, InputError
from aoe_runner.runs.bank import CREATE_FLAGS, READ_FLAGS, copy_file, open_path, regular_stat, take_inventory, write_side
from aoe_runner.runs.blobs import BlobStore
from aoe_runner.runs.manifest import BankFile, BankInventory, RunManifest

if TYPE_CHECKING:
    from aoe_runner.runs.history import RunStore

_BACKUP_WRITE = "cannot write the backup of the bank"


class BankInUse(AoeRunnerError):
    """A live tuning run writes into the bank a restore would change."""

    exit_code = ExitCode.FINDING


def refuse_if_in_use(bank: Path, live_runs: list[RunManifest]) -> None:
    """Refuse while a live run tunes this bank, through whichever path either of us reached it."""
    for run in live_runs:
        if os.path.realpath(run.bank) == os.path.realpath(bank):
            raise BankInUse(f"{bank} is being tuned by run {run.id} ({_holder(run)}); restore it when that run ends")


def _holder(run: RunManifest) -> str:
    """Who runs `run`, as the run names itself in its locks (tune/session.py)."""
    from aoe_runner.common.locks import LockHolder, run_command

    command = run_command(run.kind, run.script, run.arguments, f"run {run.id}")
    started = run.started_at.isoformat(timespec="seconds")
    holder = LockHolder(user=run.facts.user, pid=run.supervisor_pid, host=run.facts.hostname, started_at=started, command=command)
    return holder.describe()


@dataclass
class RestorePlan:
    bank: Path
    snapshot: Path | BlobStore  # a bank-before/ directory (records before 0.2), or the blob store
    wanted: dict[str, BankFile]
    present: set[str] = field(default_factory=set)  # files and symlinks in the bank now
    write: list[str] = field(default_factory=list)  # from the snapshot: missing now, or different
    remove: list[str] = field(default_factory=list)  # files and symlinks not in the snapshot
    remove_directories: list[str] = field(default_factory=list)  # not in the snapshot: deepest first, once empty
    make_directories: list[str] = field(default_factory=list)  # in the snapshot, missing now

    @property
    def empty(self) -> bool:
        return not (self.write or self.remove or self.remove_directories or self.make_directories)

    def lines(self) -> list[str]:
        """One line per change: files put back, files removed, then directories."""
        lines = [self._restore_line(path) for path in self.write]
        lines += [f"remove  {path}" for path in self.remove]
        lines += [f"remove  {path}/ (when empty)" for path in self.remove_directories]
        return lines + [f"create  {path}/" for path in self.make_directories]

    def _restore_line(self, path: str) -> str:
        link = self.wanted[path].link
        return f"restore {path}" if link is None else f"restore {path} -> {link}"


def plan_restore(before: BankInventory, snapshot: Path | BlobStore) -> RestorePlan:
    bank = Path(before.directory)
    current = take_inventory(bank)
    now, wanted = current.by_path(), before.by_path()
    plan = RestorePlan(bank=bank, snapshot=snapshot, wanted=wanted, present=set(now))
    plan.write = sorted(path for path, file in wanted.items() if path not in now or now[path].differs_from(file))
    plan.remove = sorted(now.keys() - wanted.keys())
    present = set(current.directories or [])
    if before.directories is None:  # recorded before directories were: remove only those in the way of a file
        keep = {directory for directory in present if not _under_any(directory, wanted)}
    else:
        keep = set(before.directories)
        plan.make_directories = sorted(keep - present)
    plan.remove_directories = sorted(present - keep, reverse=True)
    missing = [path for path in plan.write if wanted[path].link is None and not _in_snapshot(snapshot, wanted[path])]
    if missing:
        where = snapshot.blobs if isinstance(snapshot, BlobStore) else snapshot
        raise InputError(str(where), f"the bank snapshot is incomplete: {missing[0]} is missing")
    return plan


def apply_restore(plan: RestorePlan, backup: Path) -> None:
    """Back up what will change, then make the bank equal to the snapshot, writing nowhere outside it."""
    plan.bank.mkdir(parents=True, exist_ok=True)
    bank = os.open(plan.bank, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for relative in sorted(plan.present & {*plan.write, *plan.remove}):
            _back_up(bank, plan.bank, relative, backup)
        for relative in plan.remove:
            with _Parent(bank, plan.bank, relative) as (parent, name):
                _ignore_missing(os.unlink, name, dir_fd=parent)
        for relative in plan.remove_directories:
            with _Parent(bank, plan.bank, relative) as (parent, name):
                _remove_if_empty(parent, name)
        for relative in plan.make_directories:
            os.close(open_path(bank, plan.bank, relative, create=True))
        for relative in plan.write:
            with _Parent(bank, plan.bank, relative, create=True) as (parent, name):
                _put_back(plan, relative, parent, name)
    finally:
        os.close(bank)


def _create(path: Path, what: str) -> int:
    try:
        return os.open(path, CREATE_FLAGS, 0o600)
    except OSError as error:
        raise InputError(str(path), f"{what}: {error.strerror or error}") from None


class _Parent:
    """`with _Parent(bank_fd, bank, "a/b/c") as (fd_of_a_b, "c")`: the parent opened safely, closed after."""

    def __init__(self, root: int, where: Path, relative: str, create: bool = False) -> None:
        parent, _, self.name = relative.rpartition("/")
        self.fd = open_path(root, where, parent, create)

    def __enter__(self) -> tuple[int, str]:
        return self.fd, self.name

    def __exit__(self, *exc_info: object) -> None:
        os.close(self.fd)


def _back_up(bank: int, where: Path, relative: str, backup: Path) -> None:
    with _Parent(bank, where, relative) as (parent, name):
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        target = backup / relative
        write_side(lambda: target.parent.mkdir(parents=True, exist_ok=True), target, _BACKUP_WRITE)
        if stat.S_ISLNK(info.st_mode):
            write_side(os.symlink, target, _BACKUP_WRITE, os.readlink(name, dir_fd=parent), target)
        elif stat.S_ISREG(info.st_mode):
            source = os.open(name, READ_FLAGS, dir_fd=parent)
            try:
                regular_stat(source, where / relative)
                copy = _create(target, _BACKUP_WRITE)
                os.fchmod(copy, stat.S_IMODE(info.st_mode))
                copy_file(source, where / relative, copy, target, _BACKUP_WRITE)
            finally:
                os.close(source)


def _put_back(plan: RestorePlan, relative: str, parent: int, name: str) -> None:
    """Replace parent/name with its recorded version by write-then-rename."""
    wanted, where = plan.wanted[relative], plan.bank / relative
    temporary = f".{name}.{os.getpid()}.restore"
    _ignore_missing(os.unlink, temporary, dir_fd=parent)  # left by an interrupted restore
    try:
        link = wanted.link
        if link is not None:
            write_side(lambda: os.symlink(link, temporary, dir_fd=parent), where, "cannot write")
        else:
            _copy_from_snapshot(plan, relative, parent, temporary)
        write_side(lambda: os.rename(temporary, name, src_dir_fd=parent, dst_dir_fd=parent), where, "cannot write")
    except BaseException:
        _ignore_missing(os.unlink, temporary, dir_fd=parent)
        raise


def _copy_from_snapshot(plan: RestorePlan, relative: str, parent: int, temporary: str) -> None:
    wanted, where = plan.wanted[relative], plan.bank / relative
    source, read_where = _open_snapshot(plan.snapshot, relative, wanted)
    try:
        mode = wanted.mode if wanted.mode is not None else stat.S_IMODE(regular_stat(source, read_where).st_mode)
        target = _create_in(parent, temporary, where)
        write_side(os.fchmod, where, "cannot write", target, mode)
        _, digest = copy_file(source, read_where, target, where)
    finally:
        os.close(source)
    if digest != wanted.sha256:
        raise InputError(str(read_where), "differs from its recorded sha256; the snapshot was changed")


def _open_snapshot(snapshot: Path | BlobStore, relative: str, wanted: BankFile) -> tuple[int, Path]:
    """The recorded content of one bank file, opened for reading, and where it is."""
    if isinstance(snapshot, BlobStore):
        where = snapshot.blob_path(wanted.sha256)
        try:
            return os.open(where, READ_FLAGS), where
        except OSError as error:
            raise InputError(str(where), f"cannot read the bank snapshot: {error.strerror}") from None
    directory = os.open(snapshot, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with _Parent(directory, snapshot, relative) as (snapshot_parent, name):
            try:
                return os.open(name, READ_FLAGS, dir_fd=snapshot_parent), snapshot / relative
            except OSError as error:
                raise InputError(str(snapshot / relative), f"cannot read the bank snapshot: {error.strerror}") from None
    finally:
        os.close(directory)


def _create_in(parent: int, name: str, where: Path) -> int:
    try:
        return os.open(name, CREATE_FLAGS, 0o600, dir_fd=parent)
    except OSError as error:
        raise InputError(str(where), f"cannot write: {error.strerror}") from None


def _remove_if_empty(parent: int, name: str) -> None:
    try:
        os.rmdir(name, dir_fd=parent)
    except OSError:  # not empty (something unrecorded is in it), already gone, or not a directory: leave it
        pass


def _ignore_missing(operation: Callable[..., object], *arguments: object, **keywords: object) -> None:
    try:
        operation(*arguments, **keywords)
    except FileNotFoundError:
        pass


def _under_any(directory: str, files: dict[str, BankFile]) -> bool:
    """Whether directory, or one above it, is where the snapshot has a file."""
    parts = directory.split("/")
    return any("/".join(parts[:depth]) in files for depth in range(1, len(parts) + 1))


def _in_snapshot(snapshot: Path | BlobStore, file: BankFile) -> bool:
    if isinstance(snapshot, BlobStore):
        return snapshot.has_blob(file.sha256)
    try:
        return stat.S_ISREG(os.lstat(snapshot / file.path).st_mode)
    except OSError:
        return False


@dataclass(frozen=True)
class Restored:
    """What `restore_before` did: the plan it followed, and where the replaced files went (None: nothing written)."""

    run: str
    bank: Path
    plan: RestorePlan
    backup: Path | None


def restore_before(
    store: RunStore, reference: str, dry_run: bool = False, planned: Callable[[RestorePlan], None] = lambda plan: None
) -> Restored:
    """Roll the bank of tuning run `reference` back to its state before the run, holding the bank's lock so that no
    tune starts on it meanwhile; with dry_run only plan it. `planned` sees a plan that changes something before it
    is carried out. Files replaced or removed go to a new directory under the home's bank-backups/."""
    from aoe_runner.common.devlock import BankLock, LockHolder
    from aoe_runner.runs.history import TUNING

    manifest = store.resolve(reference, kind=TUNING)
    bank = Path(manifest.bank_before.directory)
    if dry_run:
        plan = plan_restore(*store.restore_source(manifest))
        if not plan.empty:
            planned(plan)
        return Restored(manifest.id, bank, plan, None)
    refuse_if_in_use(bank, store.live_runs())
    with BankLock(bank).acquire(LockHolder.here(f"aoe-runner bank restore {manifest.id}")):
        plan = plan_restore(*store.restore_source(manifest))
        if plan.empty:
            return Restored(manifest.id, bank, plan, None)
        planned(plan)
        backup = _new_path(store.home / "bank-backups" / f"{datetime.now():%Y%m%d-%H%M%S}-before-restoring-{manifest.id}")
        apply_restore(plan, backup)
    return Restored(manifest.id, bank, plan, backup)


def _new_path(wanted: Path) -> Path:
    """`wanted`, or with -2, -3... when it is taken: a restore run again in the same second (after an interrupted
    one, say) backs up into a directory of its own (the bank's lock keeps two restores of it from racing)."""
    candidate, number = wanted, 1
    while os.path.lexists(candidate):
        number += 1
        candidate = wanted.with_name(f"{wanted.name}-{number}")
    return candidate
