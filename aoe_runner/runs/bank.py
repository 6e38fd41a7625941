"""Knowledge-bank inventories, the snapshot kept in a run record, and rolling a bank back to it.

Bank files are opaque (AOE.md §3): aoe-runner only lists, hashes and copies them, and writes into a
bank only on an explicit restore. Inside a bank nothing is followed: every path is opened one component at
a time from a directory descriptor with O_NOFOLLOW, and a symlink is recorded as a symlink, with its target,
so a restore puts the link back and never writes through one, in the bank or in the snapshot. Every entry
that cannot be read is an error naming it: an inventory never leaves anything out in silence.

A restore first copies every file it will replace or remove into a backup directory, then replaces files
one at a time by write-then-rename (checking each against its recorded sha256 and giving it its recorded
mode), removes what the run added, and the directories it created once they are empty; it can be
interrupted and run again, and loses nothing.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from aoe_runner.errors import AoeRunnerError, ExitCode, InputError
from aoe_runner.runs.blobs import BlobStore
from aoe_runner.runs.manifest import BankChanges, BankFile, BankInventory, RunManifest

_CHUNK = 1 << 20
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_SNAPSHOT_WRITE = "cannot write the bank snapshot"
RACY_S = 2.0  # a file changed this close to the earlier inventory may have changed unseen within the same mtime tick
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
    from aoe_runner.locks import LockHolder, run_command

    command = run_command(run.kind, run.script, run.arguments, f"run {run.id}")
    started = run.started_at.isoformat(timespec="seconds")
    holder = LockHolder(user=run.facts.user, pid=run.supervisor_pid, host=run.facts.hostname, started_at=started, command=command)
    return holder.describe()


def take_inventory(
    directory: Path, blobs: BlobStore | None = None, previous: BankInventory | None = None, rehash: bool = False
) -> BankInventory:
    """List, size and hash every entry under directory; with blobs, keep each file's content in the store.

    A file whose size, mtime and inode match `previous` (an earlier inventory of the same bank) keeps its recorded
    sha256 without being read, unless it changed within RACY_S of that inventory (git's "racily clean" rule), its
    blob is missing, or `rehash` asks for every file to be read.
    """
    taken_at = datetime.now(timezone.utc)
    try:
        root = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the bank is whatever its path names
    except (FileNotFoundError, NotADirectoryError):
        return BankInventory(directory=str(directory), exists=False, taken_at=taken_at)
    except OSError as error:
        raise InputError(str(directory), f"cannot read directory: {error.strerror}") from None
    known = _Known(previous, blobs) if previous is not None and not rehash else None
    files, directories = [], []
    try:
        for relative, parent, name, info in _walk(root, directory):
            if stat.S_ISDIR(info.st_mode):
                directories.append(relative)
            elif (entry := _inventory_entry(parent, name, relative, info, directory, blobs, known)) is not None:
                files.append(entry)
    finally:
        os.close(root)
    files.sort(key=lambda file: file.path)
    return BankInventory(directory=str(directory), exists=True, files=files, directories=directories, taken_at=taken_at)


class _Known:
    """What an earlier inventory says about files that have not changed since."""

    def __init__(self, previous: BankInventory, blobs: BlobStore | None) -> None:
        self.files = previous.by_path()
        self.trusted_before_ns = int(previous.taken_at.timestamp() * 1e9) - int(RACY_S * 1e9)
        self.stored = blobs.blob_names() if blobs is not None else None  # None: contents need not be stored

    def unchanged(self, relative: str, info: os.stat_result) -> BankFile | None:
        file = self.files.get(relative)
        if file is None or file.link is not None or file.mtime_ns is None:
            return None
        same = (file.size, file.mtime_ns, file.inode) == (info.st_size, info.st_mtime_ns, info.st_ino)
        if not same or info.st_mtime_ns >= self.trusted_before_ns:
            return None
        if self.stored is not None and file.sha256 not in self.stored:
            return None
        mode = stat.S_IMODE(info.st_mode)
        return file if file.mode == mode else replace(file, mode=mode)


def changes_between(before: BankInventory, after: BankInventory) -> BankChanges:
    old, new = before.by_path(), after.by_path()
    return BankChanges(
        added=sorted(new.keys() - old.keys()),
        removed=sorted(old.keys() - new.keys()),
        modified=sorted(path for path in old.keys() & new.keys() if new[path].differs_from(old[path])),
    )


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
            os.close(_open_path(bank, plan.bank, relative, create=True))
        for relative in plan.write:
            with _Parent(bank, plan.bank, relative, create=True) as (parent, name):
                _put_back(plan, relative, parent, name)
    finally:
        os.close(bank)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _walk(directory: int, where: Path, prefix: str = "") -> Iterator[tuple[str, int, str, os.stat_result]]:
    """(relative path, parent fd, name, lstat) of every entry, parents first; symlinks are entries, never followed."""
    try:
        names = sorted(os.listdir(directory))
    except OSError as error:
        raise InputError(str(where), f"cannot read directory: {error.strerror}") from None
    for name in names:
        try:
            info = os.stat(name, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:  # removed while we listed: it is not part of the bank any more
            continue
        except OSError as error:
            raise InputError(str(where / name), f"cannot read bank entry: {error.strerror}") from None
        yield prefix + name, directory, name, info
        if stat.S_ISDIR(info.st_mode):
            child = _open_path(directory, where, name)
            try:
                yield from _walk(child, where / name, f"{prefix}{name}/")
            finally:
                os.close(child)


def _inventory_entry(
    parent: int, name: str, relative: str, info: os.stat_result, bank: Path, blobs: BlobStore | None, known: _Known | None
) -> BankFile | None:
    if known is not None and stat.S_ISREG(info.st_mode) and (unchanged := known.unchanged(relative, info)) is not None:
        return unchanged  # the common case on a big bank: no path built, nothing read
    where = bank / relative
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(name, dir_fd=parent)
        encoded = os.fsencode(target)
        return BankFile(path=relative, size=len(encoded), sha256=hashlib.sha256(encoded).hexdigest(), link=target)
    if not stat.S_ISREG(info.st_mode):
        raise InputError(str(where), f"{_kind(info.st_mode)} in a bank, which holds only files, directories and symlinks")
    try:
        source = os.open(name, _READ, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise InputError(str(where), f"cannot read bank file: {error.strerror}") from None
    try:
        opened = _regular(source, where)
        size, digest = _hash_into(source, where, blobs)
    finally:
        os.close(source)
    return BankFile(
        path=relative,
        size=size,
        sha256=digest,
        mode=stat.S_IMODE(opened.st_mode),
        mtime_ns=opened.st_mtime_ns,
        inode=opened.st_ino,
    )


def _hash_into(source: int, where: Path, blobs: BlobStore | None) -> tuple[int, str]:
    """Hash the file, and with blobs keep its content there (once: a blob that exists is not written again)."""
    if blobs is None:
        return _copy(source, where)
    try:
        target, temporary = blobs.new_blob()
    except OSError as error:
        raise InputError(str(blobs.blobs), f"{_SNAPSHOT_WRITE}: {error.strerror or error}") from None
    try:
        size, digest = _copy(source, where, target, blobs.blobs, f"{_SNAPSHOT_WRITE} (storing {where})")
        _write_side(blobs.commit_blob, blobs.blobs, f"{_SNAPSHOT_WRITE} (storing {where})", temporary, digest)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return size, digest


def _copy(
    source: int, read_where: Path, target: int | None = None, write_where: Path | None = None, what: str = "cannot write"
) -> tuple[int, str]:
    """Hash source (and copy it to target, then close target): a read error names read_where, a write error write_where."""
    digest, size = hashlib.sha256(), 0
    try:
        while True:
            try:
                chunk = os.read(source, _CHUNK)
            except OSError as error:
                raise InputError(str(read_where), f"cannot read bank file: {error.strerror}") from None
            if not chunk:
                return size, digest.hexdigest()
            digest.update(chunk)
            size += len(chunk)
            if target is not None:
                _write_side(_write_all, write_where, what, target, chunk)
    finally:
        if target is not None:
            _write_side(os.close, write_where, what, target)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_side(operation: Callable[..., object], where: Path | None, what: str, *arguments: object) -> None:
    try:
        operation(*arguments)
    except OSError as error:
        raise InputError(str(where), f"{what}: {error.strerror or error}") from None


def _create(path: Path, what: str) -> int:
    try:
        return os.open(path, _CREATE, 0o600)
    except OSError as error:
        raise InputError(str(path), f"{what}: {error.strerror or error}") from None


def _regular(fd: int, where: Path) -> os.stat_result:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise InputError(str(where), f"became {_kind(info.st_mode)} while it was read")
    return info


def _open_path(root: int, where: Path, relative: str, create: bool = False) -> int:
    """The directory root/relative, opened one component at a time; a symlink on the way is refused, never followed."""
    current = os.dup(root)
    try:
        for part in Path(relative).parts:
            if create:
                _ignore_existing(os.mkdir, part, dir_fd=current)
            try:
                following = os.open(part, _DIRECTORY, dir_fd=current)
            except OSError as error:
                raise _not_a_directory(current, part, where / part, error) from None
            os.close(current)
            current = following
            where = where / part
    except BaseException:
        os.close(current)
        raise
    return current


class _Parent:
    """`with _Parent(bank_fd, bank, "a/b/c") as (fd_of_a_b, "c")`: the parent opened safely, closed after."""

    def __init__(self, root: int, where: Path, relative: str, create: bool = False) -> None:
        parent, _, self.name = relative.rpartition("/")
        self.fd = _open_path(root, where, parent, create)

    def __enter__(self) -> tuple[int, str]:
        return self.fd, self.name

    def __exit__(self, *exc_info: object) -> None:
        os.close(self.fd)


def _not_a_directory(parent: int, name: str, where: Path, error: OSError) -> InputError:
    try:
        kind = _kind(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        kind = "a directory"  # gone, or not even that can be seen: say what failed
    if kind == "a directory":
        return InputError(str(where), f"cannot read directory: {error.strerror}")
    return InputError(str(where), f"{kind} where a directory should be; refusing to follow it")


def _back_up(bank: int, where: Path, relative: str, backup: Path) -> None:
    with _Parent(bank, where, relative) as (parent, name):
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        target = backup / relative
        _write_side(lambda: target.parent.mkdir(parents=True, exist_ok=True), target, _BACKUP_WRITE)
        if stat.S_ISLNK(info.st_mode):
            _write_side(os.symlink, target, _BACKUP_WRITE, os.readlink(name, dir_fd=parent), target)
        elif stat.S_ISREG(info.st_mode):
            source = os.open(name, _READ, dir_fd=parent)
            try:
                _regular(source, where / relative)
                copy = _create(target, _BACKUP_WRITE)
                os.fchmod(copy, stat.S_IMODE(info.st_mode))
                _copy(source, where / relative, copy, target, _BACKUP_WRITE)
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
            _write_side(lambda: os.symlink(link, temporary, dir_fd=parent), where, "cannot write")
        else:
            _copy_from_snapshot(plan, relative, parent, temporary)
        _write_side(lambda: os.rename(temporary, name, src_dir_fd=parent, dst_dir_fd=parent), where, "cannot write")
    except BaseException:
        _ignore_missing(os.unlink, temporary, dir_fd=parent)
        raise


def _copy_from_snapshot(plan: RestorePlan, relative: str, parent: int, temporary: str) -> None:
    wanted, where = plan.wanted[relative], plan.bank / relative
    source, read_where = _open_snapshot(plan.snapshot, relative, wanted)
    try:
        mode = wanted.mode if wanted.mode is not None else stat.S_IMODE(_regular(source, read_where).st_mode)
        target = _create_in(parent, temporary, where)
        _write_side(os.fchmod, where, "cannot write", target, mode)
        _, digest = _copy(source, read_where, target, where)
    finally:
        os.close(source)
    if digest != wanted.sha256:
        raise InputError(str(read_where), "differs from its recorded sha256; the snapshot was changed")


def _open_snapshot(snapshot: Path | BlobStore, relative: str, wanted: BankFile) -> tuple[int, Path]:
    """The recorded content of one bank file, opened for reading, and where it is."""
    if isinstance(snapshot, BlobStore):
        where = snapshot.blob_path(wanted.sha256)
        try:
            return os.open(where, _READ), where
        except OSError as error:
            raise InputError(str(where), f"cannot read the bank snapshot: {error.strerror}") from None
    directory = os.open(snapshot, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with _Parent(directory, snapshot, relative) as (snapshot_parent, name):
            try:
                return os.open(name, _READ, dir_fd=snapshot_parent), snapshot / relative
            except OSError as error:
                raise InputError(str(snapshot / relative), f"cannot read the bank snapshot: {error.strerror}") from None
    finally:
        os.close(directory)


def _create_in(parent: int, name: str, where: Path) -> int:
    try:
        return os.open(name, _CREATE, 0o600, dir_fd=parent)
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


def _ignore_existing(operation: Callable[..., object], *arguments: object, **keywords: object) -> None:
    try:
        operation(*arguments, **keywords)
    except FileExistsError:
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


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symlink"), (stat.S_ISFIFO, "a FIFO")):
        if test(mode):
            return name
    return "a file" if stat.S_ISREG(mode) else "a special file"
