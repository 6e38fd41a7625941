"""Removing runs from the history, and the stored bank contents only they needed.

A removal is crash-safe: its run ids are first written to a journal (`prune.journal`), then their index rows go,
then their directories are renamed into `trash/` and deleted, then the blob store is collected, and last the
journal goes. Every step can be done again, so an interrupted removal is finished by the next `runs prune` or
`runs rm` before it does anything else. A live run is never removed, and blobs are collected only when every
remaining manifest could be read (a manifest we cannot read may need any blob). Nothing is deleted through a
symbolic link, or in a home directory anyone may write to (`_refuse_unsafe_places`).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from aoe_runner.errors import AoeRunnerError, ExitCode, InputError, UsageError
from aoe_runner.fsutil import atomic_write_text
from aoe_runner.runs.index import RunFilter, RunRow
from aoe_runner.runs.manifest import BankInventory, RunStatus
from aoe_runner.runs.store import TUNING, RunStore

JOURNAL = "prune.journal"
DELETE_THREADS = 16
TRASH = "trash"


class RunIsLive(AoeRunnerError):
    exit_code = ExitCode.FINDING


@dataclass(frozen=True)
class PruneRule:
    """Which runs go: those matching every filter given, except the newest `keep` of them and live runs."""

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

    @property
    def bytes(self) -> int:
        return self.run_bytes + self.blob_bytes


def select(store: RunStore, rule: PruneRule, now: datetime | None = None) -> list[RunRow]:
    """The runs the rule removes, newest first."""
    rows = store.list(RunFilter(script=rule.script, status=rule.status, kind=rule.kind))
    rows = [row for row in rows if row.status is not RunStatus.RUNNING]  # list() has settled the dead ones
    if rule.keep is not None:
        rows = rows[rule.keep :]
    if rule.older_than_s is not None:
        cutoff = (now or datetime.now(timezone.utc)) - timedelta(seconds=rule.older_than_s)
        rows = [row for row in rows if datetime.fromisoformat(row.started_at) < cutoff]
    return rows


def plan_removal(store: RunStore, rows: list[RunRow]) -> Removal:
    """What removing these runs gives back, without removing anything."""
    removal = Removal(rows)
    removal.run_bytes = sum(_tree_size(store.run_dir(row.id)) for row in rows)
    going = {row.id for row in rows}
    kept = [row for row in store.list() if row.id not in going]
    unindexed = _unindexed(store)
    if unindexed:
        removal.notes.append(_unreadable_note(unindexed))
        return removal
    freed = _blobs_of(store, rows) - _blobs_of(store, kept)
    removal.blob_bytes = sum(_size(store.blobs.blob_path(sha)) for sha in freed)
    return removal


def remove_runs(store: RunStore, rows: list[RunRow]) -> Removal:
    """Remove the runs, then every stored bank content no remaining run needs."""
    finish_interrupted(store)
    removal = plan_removal(store, rows)
    for row in rows:
        if store.is_live(row.id):
            raise RunIsLive(f"run {row.id} is running (pid of its supervisor alive); it can be removed once it ends")
    store.home.mkdir(parents=True, exist_ok=True)  # a new home: nothing to remove, and nowhere for the journal yet
    atomic_write_text(store.home / JOURNAL, json.dumps([row.id for row in rows]) + "\n")
    _carry_out(store, [row.id for row in rows], removal.notes)
    return removal


def finish_interrupted(store: RunStore) -> list[str]:
    """Finish a removal a crash or Ctrl-C interrupted; the ids it removed."""
    _refuse_unsafe_places(store)
    journal = store.home / JOURNAL
    try:
        ids = json.loads(journal.read_text())
    except FileNotFoundError:
        _empty_trash(store)
        return []
    except (OSError, ValueError):
        ids = []  # a journal cut off before its rename cannot exist: atomic_write_text; a damaged one only lists
    _carry_out(store, [str(run_id) for run_id in ids], [])
    return ids


def _carry_out(store: RunStore, ids: list[str], notes: list[str]) -> None:
    store.index.delete(ids)
    trash = store.home / TRASH
    trash.mkdir(exist_ok=True)
    for run_id in ids:
        try:
            os.rename(store.run_dir(run_id), trash / run_id)
        except FileNotFoundError:
            pass  # moved already, by the removal this one finishes
    _empty_trash(store)
    unindexed = _unindexed(store)
    if unindexed:
        notes.append(_unreadable_note(unindexed))
    else:
        kept = store.list()
        store.blobs.collect(
            keep=[_stub(row.bank_before) for row in kept if row.bank_before]
            + [_stub(row.bank_after) for row in kept if row.bank_after],
            keep_whole=[_stub(row.bank_before) for row in kept if row.kind == TUNING and row.bank_before],
        )
    (store.home / JOURNAL).unlink(missing_ok=True)


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
    """Run directories the index has no row for: their manifests could not be read, so they might need any blob."""
    if not store.runs_dir.is_dir():
        return []
    present = {entry.name for entry in os.scandir(store.runs_dir) if entry.is_dir(follow_symlinks=False)}
    return sorted(present - store.index.all_ids())


def _unreadable_note(unindexed: list[str]) -> str:
    return (
        f"{len(unindexed)} run records could not be read (e.g. runs/{unindexed[0]}/manifest.json): stored bank "
        "contents are kept until they can be"
    )


def _blobs_of(store: RunStore, rows: Iterable[RunRow]) -> set[str]:
    """The blobs the before-inventories of these tuning runs need, each inventory read once."""
    needed: set[str] = set()
    for identity in {row.bank_before for row in rows if row.kind == TUNING and row.bank_before}:
        needed |= {file.sha256 for file in store.blobs.expand(_stub(identity)).files if file.link is None}
    return needed


def _stub(identity: str) -> BankInventory:
    """An inventory known only by its id in the store, as collect and expand need it."""
    return BankInventory(directory="", exists=True, taken_at=_EPOCH, stored=identity)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _tree_size(directory: Path) -> int:
    total = 0
    for root, _directories, files in os.walk(directory):
        total += sum(_size(Path(root) / name) for name in files)
    return total


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0
