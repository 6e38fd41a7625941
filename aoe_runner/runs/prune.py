"""Removing runs from the history, and the stored bank contents only they needed.

A removal is crash-safe: its run ids are first written to a journal (`prune.journal`), then their index rows go,
then their directories are renamed into `trash/` and deleted, then the blob store is collected, and last the
journal goes. Every step can be done again, so an interrupted removal is finished by the next `runs prune` or
`runs rm` before it does anything else. A live run is never removed, and blobs are collected only when every
remaining manifest could be read (a manifest we cannot read may need any blob).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from aoe_runner.errors import AoeRunnerError, ExitCode, UsageError
from aoe_runner.fsutil import atomic_write_text
from aoe_runner.runs.index import RunFilter, RunRow
from aoe_runner.runs.manifest import RunStatus
from aoe_runner.runs.store import TUNING, RunStore

JOURNAL = "prune.journal"
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
    kept, unreadable = _remaining(store, going)
    if unreadable:
        removal.notes.append(f"{unreadable} manifests could not be read: stored bank contents are kept until they can")
        return removal
    needed = _blobs_of(store, kept)
    freed = _blobs_of(store, [manifest for manifest in _loaded(store, going)]) - needed
    removal.blob_bytes = sum(_size(store.blobs.blob_path(sha)) for sha in freed)
    return removal


def remove_runs(store: RunStore, rows: list[RunRow]) -> Removal:
    """Remove the runs, then every stored bank content no remaining run needs."""
    finish_interrupted(store)
    removal = plan_removal(store, rows)
    for row in rows:
        if store.is_live(row.id):
            raise RunIsLive(f"run {row.id} is running (pid of its supervisor alive); it can be removed once it ends")
    atomic_write_text(store.home / JOURNAL, json.dumps([row.id for row in rows]) + "\n")
    _carry_out(store, [row.id for row in rows], removal.notes)
    return removal


def finish_interrupted(store: RunStore) -> list[str]:
    """Finish a removal a crash or Ctrl-C interrupted; the ids it removed."""
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
    kept, unreadable = _remaining(store, set())
    if not unreadable:
        tuned = [manifest for manifest in kept if manifest.kind == TUNING]
        store.blobs.collect(
            keep=[inventory for manifest in kept for inventory in (manifest.bank_before, manifest.bank_after) if inventory],
            keep_whole=[manifest.bank_before for manifest in tuned],
        )
    (store.home / JOURNAL).unlink(missing_ok=True)


def _empty_trash(store: RunStore) -> None:
    trash = store.home / TRASH
    if trash.is_dir():
        for entry in trash.iterdir():
            shutil.rmtree(entry, ignore_errors=True)


def _remaining(store: RunStore, going: set[str]):  # type: ignore[no-untyped-def]
    """The manifests of the runs that stay, and how many of them could not be read."""
    kept, unreadable = [], 0
    if not store.runs_dir.is_dir():
        return kept, 0
    for directory in store.runs_dir.iterdir():
        if directory.name in going or not directory.is_dir():
            continue
        manifest = store.load_or_warn(directory.name)
        if manifest is None:
            unreadable += 1
        else:
            kept.append(manifest)
    return kept, unreadable


def _loaded(store: RunStore, ids: Iterable[str]):  # type: ignore[no-untyped-def]
    for run_id in ids:
        manifest = store.load_or_warn(run_id)
        if manifest is not None:
            yield manifest


def _blobs_of(store: RunStore, manifests) -> set[str]:  # type: ignore[no-untyped-def]
    """The blobs the before-inventories of these tuning runs need, each inventory read once."""
    needed: set[str] = set()
    seen: set[str] = set()
    for manifest in manifests:
        inventory = manifest.bank_before
        if manifest.kind != TUNING or inventory.stored is None or inventory.stored in seen:
            continue
        seen.add(inventory.stored)
        needed |= {file.sha256 for file in store.blobs.expand(inventory).files if file.link is None}
    return needed


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
