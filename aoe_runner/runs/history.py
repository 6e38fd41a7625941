"""The run history: one directory per run under the aoe-runner home, indexed by one SQLite file.

`runs/<id>/manifest.json` is the record; `runs.db` (WAL) is an index of it that can be rebuilt from
the manifests, and is rebuilt whenever it is missing, empty or unreadable (a broken one is moved aside
first). A running run's supervisor holds an flock on `runs/<id>/supervisor.lock`; a run marked running
whose lock nobody holds lost its supervisor and is marked abandoned the next time the history is read.

Reading never needs to write: on a read-only home the index is opened read-only, or built in memory
from the manifests. A broken manifest is a warning, not a failure of the whole history. The end of a
run is recorded in the room reserved for it at its start (`.reserve`), so a disk that filled up during
the run still gets the outcome; failing that, a smaller manifest; failing that, a warning.
"""

from __future__ import annotations

import builtins
import fcntl
import os
import re
import secrets
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from aoe_runner.common.files import atomic_write_text
from aoe_runner.common.jsontext import dump_json, load_json
from aoe_runner.errors import InputError
from aoe_runner.runs.index import Index, RunFilter, RunIndex, RunRow, row_of
from aoe_runner.runs.record_files import (
    NO_ROOM,
    REMOVAL_JOURNAL,
    RESERVE_NAME,
    compact,
    manifest_bytes,
    manifest_problem,
    no_removal_under_way,
    reason_of,
    reserve_room,
)
from aoe_runner.runs.status import MANIFEST_NAME, RunStatus

_RUN_ID_PREFIX = re.compile(r"[0-9a-z-]{1,64}")  # a run id (YYYYmmdd-HHMMSS-<hex>) or the start of one

if TYPE_CHECKING:
    from aoe_runner.runs.blobs import BlobStore
    from aoe_runner.runs.manifest import BankInventory, RunManifest
    from aoe_runner.runs.outcomes import RunGain

__all__ = ["RunFilter", "RunRow", "RunStore"]

SUPERVISOR_LOCK = "supervisor.lock"
LEGACY_SNAPSHOT = "bank-before"  # a whole copy of the bank in each run record, before the blob store
TUNING = "tune"


class RunStore:
    shared_by_hosts = False  # its runs were recorded on this host
    ID_RANDOM_BYTES = 4  # run ids end in 8 hex digits: many hosts sharing a store start runs in the same second

    def __init__(self, home: Path, warn: Callable[[str], None] | None = None) -> None:
        self.home = home
        self.runs_dir = home / "runs"
        self.db_path = home / "runs.db"
        self.warnings: list[str] = []
        self._warn_to = warn
        self.index: Index = RunIndex(self.db_path, self._readable_manifests, self.warn, self.runs_dir)
        self._unindexed_checked = False
        self.blob_root = home  # where bank contents and inventories are kept

    @cached_property
    def blobs(self) -> BlobStore:
        """The bank contents and inventories (loaded on first use: listing runs needs none of it)."""
        from aoe_runner.runs.blobs import BlobStore

        return BlobStore(self.blob_root)

    def warn(self, message: str) -> None:
        """A problem with one record that does not stop the command: said once."""
        if message in self.warnings:
            return
        self.warnings.append(message)
        if self._warn_to is not None:
            self._warn_to(message)

    # -- writing --------------------------------------------------------------------------------

    def ensure_writable(self) -> None:
        """Fail with one clear line, before anything is launched, when the home cannot hold a run."""
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            probe = self.runs_dir / f".write-test-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
            self.index.check_writable()
        except (OSError, sqlite3.Error) as error:
            raise InputError(str(self.home), f"cannot record runs here: {reason_of(error)} (set AOE_RUNNER_HOME)") from None

    def create_run_directory(self, started_at: datetime) -> tuple[str, Path]:
        while True:
            run_id = f"{started_at:%Y%m%d-%H%M%S}-{secrets.token_hex(self.ID_RANDOM_BYTES)}"
            directory = self.runs_dir / run_id
            try:
                directory.mkdir(parents=True)
                return run_id, directory
            except FileExistsError:
                continue

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    @contextmanager
    def supervising(self, run_id: str) -> Iterator[None]:
        """Hold the run's supervisor lock: while it is held, the run is alive."""
        try:
            fd = os.open(self.run_dir(run_id) / SUPERVISOR_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:  # its directory went meanwhile (a start stopped for an hour, swept as dead)
            raise InputError(
                str(self.run_dir(run_id)), f"cannot record the run, nothing was started: {reason_of(error)}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def save(self, manifest: RunManifest) -> None:
        """Write the manifest atomically, then index it; a crash in between is repaired on the next read."""
        atomic_write_text(self.run_dir(manifest.id) / MANIFEST_NAME, dump_json(manifest))
        self.index.upsert(manifest)

    def save_start(self, manifest: RunManifest) -> None:
        """Record a run before its script starts, and keep room for its end; nothing is left when this fails."""
        text = dump_json(manifest)
        try:
            atomic_write_text(self.run_dir(manifest.id) / MANIFEST_NAME, text)
            reserve_room(self.run_dir(manifest.id) / RESERVE_NAME, 2 * len(text))
            self.index.upsert(manifest)
        except (OSError, sqlite3.Error) as error:
            shutil.rmtree(self.run_dir(manifest.id), ignore_errors=True)
            raise InputError(str(self.home), f"cannot record the run, nothing was started: {reason_of(error)}") from None

    def save_end(self, manifest: RunManifest) -> list[str]:
        """Record a run's end whatever the disk says; returns what could not be recorded, as warnings."""
        problems: list[str] = []
        path = self.run_dir(manifest.id) / MANIFEST_NAME
        written = self._write_end(path, manifest) or self._write_end(path, compact(manifest))
        if written is None:
            problems.append(f"the run record {path} could not be written; the run will show as abandoned")
        elif written is not manifest:
            problems.append(f"the disk is full: {path} was written without the bank inventories")
        (self.run_dir(manifest.id) / RESERVE_NAME).unlink(missing_ok=True)
        try:
            self.index.upsert(manifest)
        except (OSError, sqlite3.Error) as error:
            problems.append(f"the run index {self.db_path} could not be updated: {reason_of(error)}")
        return problems

    def _write_end(self, path: Path, manifest: RunManifest) -> RunManifest | None:
        """Write one version of the end manifest, giving back the reserved room if the disk is full."""
        reserve = path.with_name(RESERVE_NAME)
        while True:
            try:
                atomic_write_text(path, dump_json(manifest))
                return manifest
            except OSError as error:
                if error.errno not in NO_ROOM or not reserve.exists():
                    return None
                reserve.unlink()

    # -- reading --------------------------------------------------------------------------------

    def load(self, run_id: str) -> RunManifest:
        from aoe_runner.runs.manifest import RunManifest

        path = self.run_dir(run_id) / MANIFEST_NAME
        try:
            manifest = load_json(RunManifest, manifest_bytes(path))
        except InputError as error:
            raise InputError(str(path), f"cannot read the run manifest: {error.reason}") from None
        except ValueError as error:  # pydantic's ValidationError, or json's for a document that is not JSON
            raise InputError(str(path), f"not a run manifest: {manifest_problem(error)}") from None
        return manifest

    def list(self, where: RunFilter | None = None) -> list[RunRow]:
        """Runs newest first; runs whose supervisor died are marked abandoned on the way."""
        where = where or RunFilter()
        if not self.db_path.exists() and not self.runs_dir.is_dir():
            return []
        self._index_unindexed()
        rows = self.index.rows(where)
        return [self._settle(row) if row.status is RunStatus.RUNNING else row for row in rows]

    def describe(self) -> str:
        """Which store this is, for -v."""
        return f"this host's history in {self.home}"

    def gains(self, rows: builtins.list[RunRow]) -> dict[str, RunGain]:
        """Each tuning run's time saved and median speed-up, from its recorded results."""
        from aoe_runner.runs.outcomes import local_gains

        return local_gains(self, rows, self.index if isinstance(self.index, RunIndex) else None)

    def restore_source(self, manifest: RunManifest) -> tuple[BankInventory, Path | BlobStore]:
        """The full bank inventory before the run, and where its files' contents are kept."""
        legacy = self.run_dir(manifest.id) / LEGACY_SNAPSHOT
        if manifest.bank_before.stored is None and legacy.is_dir():  # recorded before 0.2: a copy per run
            return manifest.bank_before, legacy
        return self.blobs.expand(manifest.bank_before), self.blobs

    def check_reachable(self, manifest: RunManifest) -> None:
        """Raise InputError when the run's artifacts cannot be read from this host (a shared store's other hosts)."""

    def load_or_warn(self, run_id: str) -> RunManifest | None:
        """The manifest, or None with a warning when it cannot be read."""
        try:
            return self.load(run_id)
        except InputError as error:
            self.warn(f"{error.message} (skipped)")
            return None

    def resolve(self, reference: str, kind: str | None = None) -> RunManifest:
        """A run by id, unique id prefix, or `latest`: the newest run, or the newest of `kind` (e.g. a tuning run)."""
        if reference == "latest":
            newest = self.list(RunFilter(kind=kind, limit=1))
            if not newest:
                raise InputError(reference, f"no {'tuning ' if kind == TUNING else ''}runs are recorded yet")
            return self.load(newest[0].id)
        if not _RUN_ID_PREFIX.fullmatch(reference):  # nor a path, nor a name no file can have (too long, not UTF-8)
            raise InputError(repr(reference), "not a run id (see 'aoe-runner runs list')")
        if (self.run_dir(reference) / MANIFEST_NAME).is_file():
            return self._own_manifest(reference)
        matches = self.index.ids_starting_with(reference)
        if not matches:
            raise InputError(reference, "no recorded run has this id (see 'aoe-runner runs list')")
        if len(matches) > 1:
            raise InputError(reference, f"matches several runs ({', '.join(matches[:2])}, ...): give more of the id")
        return self._own_manifest(matches[0])

    def is_live(self, run_id: str) -> bool:
        """Whether the run's supervisor is alive now."""
        return self._supervisor_alive(run_id)

    def live_runs(self) -> builtins.list[RunManifest]:
        """Runs whose supervisor is alive now."""
        loaded = [self.load_or_warn(row.id) for row in self.list(RunFilter(status=RunStatus.RUNNING))]
        return [manifest for manifest in loaded if manifest is not None]

    def is_recorded(self, reference: str) -> bool:
        try:
            self.resolve(reference)
        except InputError:
            return False
        return True

    def latest_comparable_pair(self, script: str | None = None) -> tuple[RunManifest, RunManifest]:
        """The two newest succeeded tuning runs with results, of one script and mode: (older, newer).

        The script and mode are those of the newest such run, or of `script` (a path or a bare name) when given.
        """
        candidates = self.list(RunFilter(script=script, kind=TUNING, status=RunStatus.SUCCEEDED))
        pair: list[RunManifest] = []
        for row in candidates:
            if not row.result_files or pair and (row.script, row.mode) != (pair[0].script, pair[0].mode_label):
                continue
            manifest = self.load_or_warn(row.id)
            if manifest is not None:
                pair.append(manifest)
            if len(pair) == 2:
                return pair[1], pair[0]
        which = f"of {script} " if script else ""
        if not pair:
            raise InputError(str(self.home), f"no succeeded tuning run {which}has result files to compare")
        newest = pair[0]
        raise InputError(newest.id, f"no earlier succeeded run of {newest.script} in {newest.mode_label} mode to compare with")

    # -- internals ------------------------------------------------------------------------------

    def _readable_manifests(self) -> Iterator[RunManifest]:
        """Every manifest on disk that can be read and names its own directory (for rebuilding the index); the
        others are a warning each. A record moved to another directory name, or edited to name another run, would be
        indexed under an id whose directory holds no such manifest: every reading would find it and rebuild again."""
        if not self.runs_dir.is_dir():
            return
        from aoe_runner.runs.manifest import RunManifest

        for manifest_path in self.runs_dir.glob(f"*/{MANIFEST_NAME}"):
            try:
                manifest = load_json(RunManifest, manifest_bytes(manifest_path))
            except (InputError, ValueError):  # pydantic's ValidationError is a ValueError
                self.warn(f"{manifest_path}: not a readable run manifest; left out of the index")
                continue
            if manifest.id != manifest_path.parent.name:
                self.warn(f"{manifest_path}: names run {manifest.id!r}, not its directory's; left out of the index")
                continue
            yield manifest

    def _index_unindexed(self) -> None:
        """Index the readable records the index lacks (a run killed between writing its manifest and indexing it was
        never listed), once per store: one listing of runs/ against the index's ids.

        Never while a removal is under way or unfinished: the runs it has taken out of the index would come back (it
        holds REMOVAL_LOCK, and its journal stays until it is done); and only a record that names its own directory
        (a copied or hand-edited one could name another run, or none)."""
        if self._unindexed_checked or not self.runs_dir.is_dir():
            return
        self._unindexed_checked = True
        with no_removal_under_way(self.home) as clear:
            if not clear or (self.home / REMOVAL_JOURNAL).exists():
                return
            found = []
            for entry in self.unindexed_directories():
                try:
                    manifest = self.load(entry.name)
                except InputError:
                    continue  # no manifest yet (a run starting), or one that cannot be read: prune says so
                if manifest.id == entry.name:
                    found.append(manifest)
            if found:
                self._try_index_all(found)

    def run_directories(self) -> builtins.list[os.DirEntry[str]]:
        """What runs/ holds as directories of its own (links and files are no run's)."""
        if not self.runs_dir.is_dir():
            return []
        return [entry for entry in os.scandir(self.runs_dir) if entry.is_dir(follow_symlinks=False)]

    def unindexed_directories(self) -> builtins.list[os.DirEntry[str]]:
        """Run directories the index has no row for."""
        indexed = self.index.all_ids()
        return [entry for entry in self.run_directories() if entry.name not in indexed]

    def _settle(self, row: RunRow) -> RunRow:
        """A row indexed as running, checked against its supervisor and its manifest."""
        if self._supervisor_alive(row.id):
            return row
        try:
            manifest = self._settled_manifest(row.id)
        except InputError as error:
            self.warn(f"{error.message} (shown as indexed)")
            return row
        if manifest.status.ended and manifest.status is not RunStatus.ABANDONED:
            self._try_index(manifest)  # the end was written but not indexed before a crash
        return row_of(manifest)

    def _try_index(self, manifest: RunManifest) -> None:
        self._try_index_all([manifest])

    def _try_index_all(self, manifests: builtins.list[RunManifest]) -> None:
        try:
            self.index.upsert_all(manifests)
        except sqlite3.Error:
            pass  # a read-only index: repaired by the next reader that can write

    def _own_manifest(self, run_id: str) -> RunManifest:
        """_settled_manifest, refused when the record names another run: `runs rm` of a copied record removed the run
        it names, and `bank restore` used that run's bank."""
        manifest = self._settled_manifest(run_id)
        if manifest.id != run_id:
            path = self.run_dir(run_id) / MANIFEST_NAME
            raise InputError(str(path), f"names run {manifest.id!r}, not its directory's: not used (remove it by hand)")
        return manifest

    def _settled_manifest(self, run_id: str) -> RunManifest:
        """The manifest, with a dead supervisor's run turned from running to abandoned (and recorded so)."""
        manifest = self.load(run_id)
        if manifest.status is RunStatus.RUNNING and not self._supervisor_alive(run_id):
            manifest.status = RunStatus.ABANDONED
            try:
                self.save(manifest)
                (self.run_dir(run_id) / RESERVE_NAME).unlink(missing_ok=True)  # the room kept for an end that never came
            except (OSError, sqlite3.Error):
                pass  # a read-only home: shown as abandoned, recorded so by the next writer
        return manifest

    def _supervisor_alive(self, run_id: str) -> bool:
        try:
            fd = os.open(self.run_dir(run_id) / SUPERVISOR_LOCK, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False
