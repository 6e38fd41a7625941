"""Removing runs from the history, and the stored bank contents only they needed.

A removal is crash-safe: its run ids are first written to a journal (`prune.journal`), then their index rows go,
then their directories are renamed into `trash/` and deleted, then the blob store is collected, and last the
journal goes. Every step can be done again, so an interrupted removal is finished by the next `runs prune` or
`runs rm` before it does anything else. A live run is never removed, and blobs are collected only when every
remaining manifest could be read (a manifest we cannot read may need any blob). Nothing is deleted through a
symbolic link, or in a home directory anyone may write to (`_refuse_unsafe_places`).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from aoe_runner.common.files import atomic_write_text, flock_telling, tree_bytes
from aoe_runner.errors import AoeRunnerError, ExitCode, InputError, UsageError
from aoe_runner.runs.blobs import KeptInventories
from aoe_runner.runs.history import TUNING, RunStore
from aoe_runner.runs.index import RunFilter, RunRow
from aoe_runner.runs.manifest import BankInventory, RunStatus
from aoe_runner.runs.pins import published_pins
from aoe_runner.runs.record_files import REMOVAL_JOURNAL, REMOVAL_LOCK, reason_of
from aoe_runner.runs.status import MANIFEST_NAME
from aoe_runner.runs.units import VERIFY, units_of

DELETE_THREADS = 16
DEAD_START_AFTER_S = 3600  # a run directory with no manifest this old is a start that was killed (a start takes seconds)
TRASH = "trash"


class RunIsLive(AoeRunnerError):
    exit_code = ExitCode.FINDING


@dataclass(frozen=True)
class PruneRule:
    """Which runs go: those matching every filter given, except the newest `keep` of them and live runs (a
    verification's runs count as one)."""

    keep: int | None = None
    older_than_s: float | None = None
    status: RunStatus | None = None
    script: str | None = None
    kind: str | None = None

    def __post_init__(self) -> None:
        if all(value is None for value in (self.keep, self.older_than_s, self.status, self.script, self.kind)):
            raise UsageError("runs prune needs --keep, --older-than, --status, --script or --kind to say which runs go")


@dataclass
class Removal:
    runs: list[RunRow]
    run_bytes: int = 0  # the run directories
    blob_bytes: int = 0  # stored bank contents only these runs needed
    notes: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)  # the runs of an interrupted removal this one finished first

    @property
    def bytes(self) -> int:
        return self.run_bytes + self.blob_bytes


def select(store: RunStore, rule: PruneRule, now: datetime | None = None) -> list[RunRow]:
    """The runs the rule removes, newest first, a unit at a time (units.py): the runs of one verification match the
    filters when all of them do, count as one for --keep, and are old when all of them are."""
    matching = {row.id for row in store.list(RunFilter(script=rule.script, status=rule.status, kind=rule.kind))}
    settled = [row for row in store.list() if row.status is not RunStatus.RUNNING]  # list() has settled the dead ones
    units = [unit for unit in units_of(store, settled) if all(row.id in matching for row in unit.rows)]
    if rule.keep is not None:
        units = units[rule.keep :]
    if rule.older_than_s is not None:
        cutoff = (now or datetime.now(timezone.utc)) - timedelta(seconds=rule.older_than_s)
        units = [unit for unit in units if all(datetime.fromisoformat(row.started_at) < cutoff for row in unit.rows)]
    return [row for unit in units for row in unit.rows]


def plan_removal(store: RunStore, rows: list[RunRow]) -> Removal:
    """What removing these runs gives back, without removing anything. A run a published bank version came from is
    kept, with a note naming the version."""
    pins = published_pins(store.home)
    pinned = pins.runs
    removal = Removal([row for row in rows if row.id not in pinned])
    for row in rows:
        if row.id in pinned:
            removal.notes.append(f"run {row.id} is kept: {', '.join(pinned[row.id])} was published from it")
    rows = removal.runs
    removal.run_bytes = sum(tree_bytes(store.run_dir(row.id)) for row in rows)
    going = {row.id for row in rows}
    kept = [row for row in store.list() if row.id not in going]
    unindexed = _unindexed(store)
    if unindexed:
        removal.notes.append(_unreadable_note(unindexed))
        return removal
    freed = _blobs_of(store, _kept_whole(rows)) - _blobs_of(store, _kept_whole(kept) | set(pins.inventories))
    removal.blob_bytes = sum(_size(store.blobs.blob_path(sha)) for sha in freed)
    return removal


def remove_runs(store: RunStore, choose: Callable[[], list[RunRow]], on_wait: Callable[[], None] | None = None) -> Removal:
    """Finish an interrupted removal, then remove the runs `choose` gives, then every stored bank content no
    remaining run needs.

    One removal at a time (REMOVAL_LOCK): two at once shared one journal, and one could lose the other's. The runs
    are chosen once the interrupted removal is finished, so that its runs are neither chosen again nor kept count of
    (`--keep 3` kept them among its 3)."""
    _refuse_unsafe_places(store)
    store.home.mkdir(parents=True, exist_ok=True)  # a new home: nothing to remove, and nowhere for the journal yet
    store.list()  # indexes readable records the index lacks, which cannot be done once the removal lock is held
    with _one_removal_at_a_time(store, on_wait):
        finished = _finish_interrupted(store)
        removal = plan_removal(store, choose())
        removal.finished = finished
        rows = removal.runs
        for row in rows:
            if store.is_live(row.id):
                raise RunIsLive(f"run {row.id} is running (pid of its supervisor alive); it can be removed once it ends")
        verifications = {unit.verification for unit in units_of(store, rows) if unit.verification is not None}
        atomic_write_text(store.home / REMOVAL_JOURNAL, json.dumps([row.id for row in rows]) + "\n")
        _carry_out(store, [row.id for row in rows], removal.notes)
        _remove_verification_directories(store, verifications)
    return removal


def _remove_verification_directories(store: RunStore, verifications: set[str]) -> None:
    """The scratch directory (its empty bank) of each verification that has no run left; a crash before this leaves
    one behind, harmlessly."""
    remaining = {unit.verification for unit in units_of(store, [row for row in store.list() if row.kind == VERIFY])}
    for verification in verifications - remaining:
        directory = store.home / "verifications" / verification
        if _one_name(verification) and directory.is_dir() and not directory.is_symlink():
            shutil.rmtree(directory, ignore_errors=True)


def remove_or_plan(
    store: RunStore, choose: Callable[[], list[RunRow]], really: bool, on_wait: Callable[[], None] | None = None
) -> Removal:
    """remove_runs, or with really False only what it would remove; a store that cannot be changed is bad input."""
    import sqlite3

    try:
        return remove_runs(store, choose, on_wait) if really else plan_removal(store, choose())
    except (OSError, sqlite3.Error) as error:  # a full disk, a read-only home, an index another process holds
        raise InputError(
            str(store.home),
            f"cannot remove runs there: {reason_of(error)}; the next runs prune or runs rm finishes what was begun",
        ) from None


@contextmanager
def _one_removal_at_a_time(store: RunStore, on_wait: Callable[[], None] | None) -> Iterator[None]:
    with _removal_lock(store, fcntl.LOCK_EX, on_wait):
        yield


@contextmanager
def keeping_runs(store: RunStore, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """No removal while held (shared with other holders): what reads runs to record something that pins them (a bank
    version) holds it until the record is written, so a removal that starts meanwhile sees the pin."""
    store.home.mkdir(parents=True, exist_ok=True)
    with _removal_lock(store, fcntl.LOCK_SH, on_wait):
        yield


@contextmanager
def _removal_lock(store: RunStore, operation: int, on_wait: Callable[[], None] | None) -> Iterator[None]:
    fd = os.open(store.home / REMOVAL_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    try:
        flock_telling(fd, operation, on_wait)
        yield
    finally:
        os.close(fd)


def _finish_interrupted(store: RunStore) -> list[str]:
    """Finish a removal a crash or Ctrl-C interrupted; the ids it removed."""
    journal = store.home / REMOVAL_JOURNAL
    try:
        ids = json.loads(journal.read_text())
    except FileNotFoundError:
        _empty_trash(store)
        return []
    except (OSError, ValueError):
        ids = []  # a journal cut off before its rename cannot exist: atomic_write_text; a damaged one only lists
    if not isinstance(ids, list):
        ids = []
    ids = [run_id for run_id in ids if isinstance(run_id, str)]
    _carry_out(store, ids, [])
    return ids


def _carry_out(store: RunStore, ids: list[str], notes: list[str]) -> None:
    ids = [run_id for run_id in ids if _one_name(run_id)]  # "" would name runs/ itself, "../x" a place outside it
    store.index.delete(ids)
    trash = store.home / TRASH
    trash.mkdir(exist_ok=True)
    for run_id in ids:
        _discard(store.run_dir(run_id), trash / run_id)
    _empty_trash(store)
    store.blobs.collect(lambda: _kept_inventories(store, notes), notes)
    (store.home / REMOVAL_JOURNAL).unlink(missing_ok=True)


def _one_name(run_id: str) -> bool:
    return run_id not in ("", ".", "..") and "/" not in run_id and "\x00" not in run_id


def _discard(directory: Path, in_trash: Path) -> None:
    """Move a run's directory into the trash, or delete it where it is when runs/ is on another filesystem than the
    home (a rename cannot cross one): its index row is gone and the journal names it, so either way a crash midway
    is finished by the next removal."""
    try:
        os.rename(directory, in_trash)
    except FileNotFoundError:
        pass  # moved already, by the removal this one finishes
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        shutil.rmtree(directory, ignore_errors=True)


def _kept_inventories(store: RunStore, notes: list[str]) -> KeptInventories | None:
    """What the runs that remain need, asked with the blob store locked (no run is between writing blobs and naming
    them in its manifest); None, and a note, while a record that cannot be read might need any blob.

    Also removes the directories of starts killed before their first record (DEAD_START_AFTER_S old, no manifest):
    they name no blob, and nothing else would ever remove them."""
    _discard_dead_starts(store)
    unindexed = _unindexed(store)
    if unindexed:
        if _unreadable_note(unindexed) not in notes:
            notes.append(_unreadable_note(unindexed))
        return None
    kept = []  # from each manifest, the record itself: an index row edited by hand must not decide what is deleted
    for row in store.list():
        try:
            kept.append(store.load(row.id))
        except InputError as error:
            note = f"{error.message}: no stored bank contents were removed, since that run may need any"
            if note not in notes:
                notes.append(note)
            return None
    after = [m.bank_after for m in kept if m.bank_after is not None]
    tuned = [m.bank_after for m in kept if m.kind == TUNING and m.bank_after is not None]  # what `bank publish` takes
    try:
        published = published_pins(store.home).stubs()
    except InputError as error:
        notes.append(f"{error.message}: no stored bank contents were removed, since a published version may need any")
        return None
    before = [m.bank_before for m in kept if m.kind == TUNING]
    return [m.bank_before for m in kept] + after + published, before + tuned + published


def _discard_dead_starts(store: RunStore) -> None:
    trash = store.home / TRASH
    now = time.time()
    for entry in store.run_directories():
        try:
            age_s = now - entry.stat(follow_symlinks=False).st_mtime
        except FileNotFoundError:
            continue
        if age_s > DEAD_START_AFTER_S and not os.path.lexists(Path(entry.path) / MANIFEST_NAME):
            _discard(Path(entry.path), trash / entry.name)
    _empty_trash(store)


def _refuse_unsafe_places(store: RunStore) -> None:
    """The directories a removal deletes in must be the home's own: through a symbolic link (trash -> ~/models) it
    would delete elsewhere, and in a directory anyone may write to, anyone could plant such a link. InputError if
    not. (The home itself may be reached through a link: AOE_RUNNER_HOME=/data/aoe, say.)"""
    places = [store.runs_dir, store.home / TRASH, store.blobs.blobs, store.blobs.inventories, store.blobs.banks]
    for place in [store.home, *places]:
        try:
            info = os.stat(place) if place == store.home else os.lstat(place)
        except FileNotFoundError:
            continue
        except OSError as error:
            raise InputError(str(place), f"cannot be checked before anything in it is deleted: {error.strerror}") from None
        if stat.S_ISLNK(info.st_mode):
            raise InputError(
                str(place), "is a symbolic link: runs are removed only inside the aoe-runner home, never through a link"
            )
        if info.st_mode & 0o002 and not info.st_mode & stat.S_ISVTX:
            raise InputError(str(place), "anyone can write to it (and plant a link to delete through): no run is removed there")


def _empty_trash(store: RunStore) -> None:
    """Delete what the trash holds; rmdir waits on the disk's journal, so several at once overlap those waits."""
    trash = store.home / TRASH
    if not trash.is_dir():
        return
    with ThreadPoolExecutor(max_workers=DELETE_THREADS) as pool:
        list(pool.map(lambda entry: shutil.rmtree(entry, ignore_errors=True), list(trash.iterdir())))


def _unindexed(store: RunStore) -> list[str]:
    """Run records the index has no row for: their manifests could not be read, so they might need any blob. (A
    readable one is indexed by the listing that comes first; a directory with no manifest names no blob.)"""
    return sorted(entry.name for entry in store.unindexed_directories() if os.path.lexists(Path(entry.path) / MANIFEST_NAME))


def _unreadable_note(unindexed: list[str]) -> str:
    return (
        f"{len(unindexed)} run records could not be read (e.g. runs/{unindexed[0]}/manifest.json): stored bank "
        "contents are kept until they can be"
    )


def _kept_whole(rows: Iterable[RunRow]) -> set[str]:
    """The inventories of these runs whose blobs a collect keeps while the runs are kept (as _kept_inventories says):
    a tuning run's bank before it, for `bank restore`, and after it, for `bank publish`."""
    return {identity for row in rows if row.kind == TUNING for identity in (row.bank_before, row.bank_after) if identity}


def _blobs_of(store: RunStore, identities: Iterable[str]) -> set[str]:
    """The blobs these inventories need, each inventory read once."""
    needed: set[str] = set()
    for identity in set(identities):
        try:
            needed |= {file.sha256 for file in store.blobs.expand(_stub(identity)).files if file.link is None}
        except InputError:
            continue  # an inventory that cannot be read frees nothing that can be counted
    return needed


def _stub(identity: str) -> BankInventory:
    """An inventory known only by its id in the store, as collect and expand need it."""
    return BankInventory(directory="", exists=True, taken_at=_EPOCH, stored=identity)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0
