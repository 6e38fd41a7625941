"""The content-addressed store under the aoe-runner home: bank file contents and bank inventories, each kept once.

    blobs/<sha256[:2]>/<sha256>        a bank file's content (read-only, written once, atomically)
    inventories/<id[:2]>/<id>.json.gz  a bank inventory: its files (path, size, sha256, mode, link, mtime, inode)
                                       and directories; the id is the sha256 of the uncompressed JSON
    banks/<sha256 of the bank path>    the newest inventory of that bank and when it was taken, so the next one
                                       re-reads only what changed

Every file is written to a temporary name in its own directory, then renamed, so a crash leaves either nothing or
a whole file. Runs reference inventories by id (the manifest stays small), and inventories reference blobs. A
blob is needed by the before- and after-inventories of the tuning runs kept (for `bank restore` and `bank
publish`) and by published versions (runs/pins.py); `collect` removes everything else. Writers hold `store.lock`
shared from the first blob they write until their manifest references it, and `collect` holds it exclusive, so it
never removes what a starting run is about to reference.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import json
import os
import re
import secrets
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import msgspec

from aoe_runner.common.files import flock_telling
from aoe_runner.common.home import bank_pointer
from aoe_runner.errors import AoeRunnerError, InputError
from aoe_runner.runs.manifest import BankFile, BankInventory

SHA256 = re.compile(r"[0-9a-f]{64}")  # a content or inventory id: never a path out of the store

LOCK_NAME = "store.lock"
KeptInventories = tuple[list[BankInventory], list[BankInventory]]  # keep, keep_whole: see BlobStore.collect


@dataclass
class _StoredInventory:
    """What inventories/<id>.json.gz holds."""

    files: list[BankFile]
    directories: list[str] | None


def _decode_inventory(raw: bytes) -> _StoredInventory:
    try:
        return msgspec.json.decode(raw, type=_StoredInventory)  # one pass, parsed and validated together
    except msgspec.DecodeError:
        if b"\\ud" not in raw:
            raise
    # a file name that is not UTF-8 is kept as a lone surrogate's escape, which msgspec refuses and json reads
    return msgspec.convert(json.loads(raw), type=_StoredInventory)


def _without_none(fields: dict[str, object]) -> dict[str, object]:
    return {name: value for name, value in fields.items() if value is not None}


@dataclass(frozen=True)
class Collected:
    blobs: int
    inventories: int
    bytes: int


class BlobStore:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.blobs = home / "blobs"
        self.inventories = home / "inventories"
        self.banks = home / "banks"

    # -- blobs ----------------------------------------------------------------------------------

    def blob_path(self, sha256: str) -> Path:
        return self.blobs / sha256[:2] / sha256

    def has_blob(self, sha256: str) -> bool:
        return self.blob_path(sha256).is_file()

    def blob_names(self) -> set[str]:
        """Every stored blob's sha256, listed once (cheaper than asking for each of many files)."""
        names: set[str] = set()
        for directory in os.scandir(self.blobs) if self.blobs.is_dir() else []:
            if directory.is_dir(follow_symlinks=False):
                names.update(entry.name for entry in os.scandir(directory.path) if entry.is_file(follow_symlinks=False))
        return names

    def new_blob(self) -> tuple[int, Path]:
        """A temporary file to stream a blob into; `commit_blob` names it once its sha256 is known."""
        self.blobs.mkdir(parents=True, exist_ok=True)
        temporary = self.blobs / f".incoming-{os.getpid()}-{secrets.token_hex(4)}"
        return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444), temporary

    def commit_blob(self, temporary: Path, sha256: str) -> None:
        target = self.blob_path(sha256)
        if target.exists():
            temporary.unlink(missing_ok=True)  # the same content is there already
            return
        target.parent.mkdir(exist_ok=True)
        os.replace(temporary, target)

    # -- inventories ----------------------------------------------------------------------------

    def save_inventory(self, inventory: BankInventory, remember: bool = True) -> BankInventory:
        """Store the inventory's files and directories once; return it as the manifest keeps it (counts and an id).
        With remember, it becomes its bank's newest inventory (what the next one compares with)."""
        body = json.dumps(
            {"files": [_without_none(vars(file)) for file in inventory.files], "directories": inventory.directories},
            separators=(",", ":"),
            sort_keys=True,
        ).encode()
        identity = hashlib.sha256(body).hexdigest()
        target = self._inventory_path(identity)
        try:
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                _write_atomically(target, gzip.compress(body, compresslevel=6, mtime=0))
            if remember:
                self._remember(inventory, identity)
        except OSError as error:  # a full disk: said as the blobs' own writes say it (bank.py's _SNAPSHOT_WRITE)
            raise InputError(str(self.inventories), f"cannot write the bank inventory: {error.strerror or error}") from None
        count, total = len(inventory.files), inventory.total_bytes
        return replace(inventory, files=[], directories=None, stored=identity, file_count=count, stored_bytes=total)

    def expand(self, inventory: BankInventory) -> BankInventory:
        """The full inventory: as it is when it was kept whole (older records), else read from the store."""
        if inventory.stored is None:
            return inventory
        if not SHA256.fullmatch(inventory.stored):  # a hand-edited record: never a path out of the store
            raise InputError(repr(inventory.stored)[:80], "not a bank inventory id (64 hex digits)")
        where = self._inventory_path(inventory.stored)
        try:
            raw = gzip.decompress(where.read_bytes())
            if hashlib.sha256(raw).hexdigest() != inventory.stored:
                raise ValueError("its content does not match its name (sha256); it was changed or damaged")
            body = _decode_inventory(raw)
        except OSError as error:
            raise InputError(str(where), f"cannot read the bank inventory: {error.strerror or error}") from None
        except (ValueError, EOFError, zlib.error, msgspec.MsgspecError) as error:
            raise InputError(str(where), f"cannot read the bank inventory: {error}") from None
        return replace(inventory, files=body.files, directories=body.directories)

    def last_inventory(self, bank: Path) -> BankInventory | None:
        """The newest inventory of this bank (by its resolved path), for finding unchanged files without reading them."""
        try:
            pointer = json.loads(bank_pointer(self.home, bank).read_text())
            stub = BankInventory(
                directory=str(bank),
                exists=True,
                taken_at=datetime.fromisoformat(pointer["taken_at"]),
                stored=pointer["inventory"],
            )
            return self.expand(stub)
        except (OSError, ValueError, KeyError, TypeError, AoeRunnerError):  # a damaged pointer costs a full re-read
            return None

    def _remember(self, inventory: BankInventory, identity: str) -> None:
        self.banks.mkdir(parents=True, exist_ok=True)
        pointer = {
            "inventory": identity,
            "taken_at": inventory.taken_at.isoformat(),
            "bank": inventory.directory,
            "bytes": inventory.total_bytes,
        }
        _write_atomically(bank_pointer(self.home, Path(inventory.directory)), json.dumps(pointer).encode())

    def _inventory_path(self, identity: str) -> Path:
        return self.inventories / identity[:2] / f"{identity}.json.gz"

    # -- locking and collecting -----------------------------------------------------------------

    @contextmanager
    def writing(self, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
        """Held (shared) while a run writes blobs its manifest does not reference yet; on_wait is told when a collect
        holds the store and it must wait."""
        with self._lock(fcntl.LOCK_SH, on_wait):
            yield

    def collect(self, kept: Callable[[], KeptInventories | None], notes: list[str]) -> Collected | None:
        """Remove every blob and inventory no kept run needs; None when `kept` says nothing may go. A kept run's
        before-inventory that cannot be read leaves every blob in place (which of them it needs is unknown), with a
        note; the runs' own removal is not held up by it.

        `kept` is asked with the store locked, so that no run can record a manifest naming blobs it has just written
        between the asking and the removal: keep, every inventory a kept run references (its inventory stays);
        keep_whole, the inventories whose blobs stay too (kept runs' restore and publish, published versions).
        Idempotent: an interrupted collect is finished by the next.
        """
        with self._lock(fcntl.LOCK_EX):
            needs = kept()
            if needs is None:
                return None
            keep, keep_whole = needs
            inventories = {inventory.stored for inventory in keep if inventory.stored} | self._pointed_at()
            needed: set[str] = set()
            unknown = False
            for inventory in {inventory.stored or id(inventory): inventory for inventory in keep_whole}.values():  # once each
                try:
                    files = self.expand(inventory).files
                except InputError as error:
                    notes.append(f"{error.message}: no stored bank contents were removed, since a kept run may need any")
                    unknown = True
                    break
                needed |= {file.sha256 for file in files if file.link is None}
            removed_blobs = 0
            freed = 0
            if not unknown:
                removed_blobs, freed = _remove_unlisted(self.blobs, needed, lambda path: path.name)
            removed_inventories, freed_more = _remove_unlisted(
                self.inventories, inventories, lambda path: path.name.removesuffix(".json.gz")
            )
        return Collected(removed_blobs, removed_inventories, freed + freed_more)

    def size(self) -> int:
        """Bytes the store holds now."""
        return sum(_tree_size(directory) for directory in (self.blobs, self.inventories, self.banks))

    def _pointed_at(self) -> set[str]:
        found = set()
        for pointer in self.banks.glob("*") if self.banks.is_dir() else []:
            try:
                found.add(json.loads(pointer.read_text())["inventory"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return found

    @contextmanager
    def _lock(self, operation: int, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
        self.home.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.home / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            flock_telling(fd, operation, on_wait)
            yield
        finally:
            os.close(fd)


def _write_atomically(target: Path, data: bytes) -> None:
    temporary = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _remove_unlisted(directory: Path, keep: set[str], name_of: Callable[[Path], str]) -> tuple[int, int]:
    removed = freed = 0
    if not directory.is_dir():
        return 0, 0
    for path in directory.rglob("*"):
        if not path.is_file() or name_of(path) in keep:
            continue
        size = path.stat().st_size
        path.unlink(missing_ok=True)  # an incoming file of a crashed writer goes too: the lock says none is live
        removed, freed = removed + 1, freed + size
    return removed, freed


def _tree_size(directory: Path) -> int:
    if not directory.is_dir():
        return 0
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())
