"""Knowledge-bank inventories and the snapshot kept in a run record (restore.py rolls a bank back to one).

Bank files are opaque (AOE.md §3): aoe-runner only lists, hashes and copies them, and writes into a
bank only on an explicit restore. Inside a bank nothing is followed: every path is opened one component at
a time from a directory descriptor with O_NOFOLLOW, and a symlink is recorded as a symlink, with its target,
so a restore puts the link back and never writes through one, in the bank or in the snapshot. Every entry
that cannot be read is an error naming it: an inventory never leaves anything out in silence.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from aoe_runner.common.regular_files import mode_kind
from aoe_runner.errors import InputError
from aoe_runner.runs.blobs import BlobStore
from aoe_runner.runs.manifest import BankChanges, BankFile, BankInventory

_CHUNK = 1 << 20
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_SNAPSHOT_WRITE = "cannot write the bank snapshot"
RACY_S = 2.0  # a file changed this close to the earlier inventory may have changed unseen within the same mtime tick


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
            child = open_path(directory, where, name)
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
        raise InputError(str(where), f"{mode_kind(info.st_mode)} in a bank, which holds only files, directories and symlinks")
    try:
        source = os.open(name, READ_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise InputError(str(where), f"cannot read bank file: {error.strerror}") from None
    try:
        opened = regular_stat(source, where)
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
        return copy_file(source, where)
    try:
        target, temporary = blobs.new_blob()
    except OSError as error:
        raise InputError(str(blobs.blobs), f"{_SNAPSHOT_WRITE}: {error.strerror or error}") from None
    try:
        size, digest = copy_file(source, where, target, blobs.blobs, f"{_SNAPSHOT_WRITE} (storing {where})")
        write_side(blobs.commit_blob, blobs.blobs, f"{_SNAPSHOT_WRITE} (storing {where})", temporary, digest)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return size, digest


def copy_file(
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
                write_side(_write_all, write_where, what, target, chunk)
    finally:
        if target is not None:
            write_side(os.close, write_where, what, target)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_side(operation: Callable[..., object], where: Path | None, what: str, *arguments: object) -> None:
    try:
        operation(*arguments)
    except OSError as error:
        raise InputError(str(where), f"{what}: {error.strerror or error}") from None


def regular_stat(fd: int, where: Path) -> os.stat_result:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise InputError(str(where), f"became {mode_kind(info.st_mode)} while it was read")
    return info


def open_path(root: int, where: Path, relative: str, create: bool = False) -> int:
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


def _not_a_directory(parent: int, name: str, where: Path, error: OSError) -> InputError:
    try:
        kind = mode_kind(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        kind = "a directory"  # gone, or not even that can be seen: say what failed
    if kind == "a directory":
        return InputError(str(where), f"cannot read directory: {error.strerror}")
    return InputError(str(where), f"{kind} where a directory should be; refusing to follow it")


def _ignore_existing(operation: Callable[..., object], *arguments: object, **keywords: object) -> None:
    try:
        operation(*arguments, **keywords)
    except FileExistsError:
        pass


def keep_content(bank: Path, relative: str, blobs: BlobStore) -> str:
    """Store the content of bank/relative in the blob store (nothing on the way followed); its sha256."""
    root = os.open(bank, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        parent_path, _, name = relative.rpartition("/")
        parent = open_path(root, bank, parent_path)
        try:
            try:
                source = os.open(name, READ_FLAGS, dir_fd=parent)
            except OSError as error:
                raise InputError(str(bank / relative), f"cannot read bank file: {error.strerror}") from None
            try:
                regular_stat(source, bank / relative)
                return _hash_into(source, bank / relative, blobs)[1]
            finally:
                os.close(source)
        finally:
            os.close(parent)
    finally:
        os.close(root)
