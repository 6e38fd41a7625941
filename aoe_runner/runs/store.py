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

import errno
import fcntl
import os
import secrets
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from aoe_runner.errors import InputError
from aoe_runner.fsutil import atomic_write_text
from aoe_runner.runs.manifest import MANIFEST_NAME, RunManifest, RunStatus

SUPERVISOR_LOCK = "supervisor.lock"
RESERVE_NAME = ".reserve"
RESERVE_BYTES = (256 << 10, 64 << 20)  # the room kept for the end of a run: at least, at most
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    status TEXT NOT NULL,
    mode TEXT NOT NULL,
    script TEXT NOT NULL,
    device INTEGER NOT NULL,
    exit_code INTEGER,
    result_files INTEGER NOT NULL,
    cann_version TEXT,
    soc TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_start ON runs (started_at DESC);
CREATE INDEX IF NOT EXISTS runs_by_script ON runs (script, mode, started_at DESC);
"""
_COLUMNS = "id, started_at, ended_at, status, mode, script, device, exit_code, result_files, cann_version, soc"


@dataclass(frozen=True)
class RunRow:
    """One line of the index: what `runs list` shows."""

    id: str
    started_at: str
    ended_at: str | None
    status: RunStatus
    mode: str
    script: str
    device: int
    exit_code: int | None
    result_files: int
    cann_version: str | None
    soc: str | None


@dataclass(frozen=True)
class RunFilter:
    script: str | None = None
    mode: str | None = None
    status: RunStatus | None = None
    limit: int | None = None


class RunStore:
    def __init__(self, home: Path, warn: Callable[[str], None] | None = None) -> None:
        self.home = home
        self.runs_dir = home / "runs"
        self.db_path = home / "runs.db"
        self.warnings: list[str] = []
        self._warn_to = warn

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
            with closing(self._open()) as db:
                db.execute("BEGIN IMMEDIATE")  # fails on an index opened read-only
                db.execute("ROLLBACK")
        except (OSError, sqlite3.Error) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise InputError(str(self.home), f"cannot record runs here: {reason} (set AOE_RUNNER_HOME)") from None

    def create_run_directory(self, started_at: datetime) -> tuple[str, Path]:
        while True:
            run_id = f"{started_at:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
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
        fd = os.open(self.run_dir(run_id) / SUPERVISOR_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def save(self, manifest: RunManifest) -> None:
        """Write the manifest atomically, then index it; a crash in between is repaired on the next read."""
        atomic_write_text(self.run_dir(manifest.id) / MANIFEST_NAME, manifest.model_dump_json(indent=2) + "\n")
        with self._connect() as db:
            _upsert(db, manifest)

    def save_start(self, manifest: RunManifest) -> None:
        """Record a run before its script starts, and keep room for its end; nothing is left when this fails."""
        text = manifest.model_dump_json(indent=2) + "\n"
        try:
            atomic_write_text(self.run_dir(manifest.id) / MANIFEST_NAME, text)
            _reserve(self.run_dir(manifest.id) / RESERVE_NAME, 2 * len(text))
            with self._connect() as db:
                _upsert(db, manifest)
        except (OSError, sqlite3.Error) as error:
            shutil.rmtree(self.run_dir(manifest.id), ignore_errors=True)
            raise InputError(str(self.home), f"cannot record the run, nothing was started: {_reason(error)}") from None

    def save_end(self, manifest: RunManifest) -> list[str]:
        """Record a run's end whatever the disk says; returns what could not be recorded, as warnings."""
        problems: list[str] = []
        path = self.run_dir(manifest.id) / MANIFEST_NAME
        written = self._write_end(path, manifest) or self._write_end(path, _compact(manifest))
        if written is None:
            problems.append(f"the run record {path} could not be written; the run will show as abandoned")
        elif written is not manifest:
            problems.append(f"the disk is full: {path} was written without the bank inventories")
        (self.run_dir(manifest.id) / RESERVE_NAME).unlink(missing_ok=True)
        try:
            with self._connect() as db:
                _upsert(db, manifest)
        except (OSError, sqlite3.Error) as error:
            problems.append(f"the run index {self.db_path} could not be updated: {_reason(error)}")
        return problems

    def _write_end(self, path: Path, manifest: RunManifest) -> RunManifest | None:
        """Write one version of the end manifest, giving back the reserved room if the disk is full."""
        reserve = path.with_name(RESERVE_NAME)
        while True:
            try:
                atomic_write_text(path, manifest.model_dump_json(indent=2) + "\n")
                return manifest
            except OSError as error:
                if error.errno not in _NO_ROOM or not reserve.exists():
                    return None
                reserve.unlink()

    # -- reading --------------------------------------------------------------------------------

    def load(self, run_id: str) -> RunManifest:
        path = self.run_dir(run_id) / MANIFEST_NAME
        try:
            return RunManifest.model_validate_json(path.read_bytes())
        except OSError as error:
            raise InputError(str(path), f"cannot read the run manifest: {error.strerror or error}") from None
        except ValidationError as error:
            raise InputError(str(path), f"not a run manifest: {error.errors()[0]['msg']}") from None

    def list(self, where: RunFilter = RunFilter()) -> list[RunRow]:
        """Runs newest first; runs whose supervisor died are marked abandoned on the way."""
        if not self.db_path.exists() and not self.runs_dir.is_dir():
            return []
        clauses, values = _where(where)
        query = f"SELECT {_COLUMNS} FROM runs {clauses} ORDER BY started_at DESC, id DESC"
        if where.limit is not None:
            query += f" LIMIT {int(where.limit)}"
        with self._connect() as db:
            rows = [_row(values) for values in db.execute(query, values)]
        return [self._settle(row) if row.status is RunStatus.RUNNING else row for row in rows]

    def load_or_warn(self, run_id: str) -> RunManifest | None:
        """The manifest, or None with a warning when it cannot be read."""
        try:
            return self.load(run_id)
        except InputError as error:
            self.warn(f"{error.message} (skipped)")
            return None

    def resolve(self, reference: str) -> RunManifest:
        """A run by id, unique id prefix, or `latest`."""
        if reference == "latest":
            newest = self.list(RunFilter(limit=1))
            if not newest:
                raise InputError(reference, "no runs are recorded yet")
            return self.load(newest[0].id)
        if "/" not in reference and (self.run_dir(reference) / MANIFEST_NAME).is_file():
            return self._settled_manifest(reference)
        with self._connect() as db:
            matches = [row[0] for row in db.execute("SELECT id FROM runs WHERE id LIKE ? || '%' LIMIT 3", (reference,))]
        if not matches:
            raise InputError(reference, "no recorded run has this id (see 'aoe-runner runs list')")
        if len(matches) > 1:
            raise InputError(reference, f"matches several runs ({', '.join(matches[:2])}, ...): give more of the id")
        return self._settled_manifest(matches[0])

    def live_runs(self) -> list[RunManifest]:
        """Runs whose supervisor is alive now."""
        loaded = [self.load_or_warn(row.id) for row in self.list(RunFilter(status=RunStatus.RUNNING))]
        return [manifest for manifest in loaded if manifest is not None]

    def is_recorded(self, reference: str) -> bool:
        try:
            self.resolve(reference)
        except InputError:
            return False
        return True

    def latest_comparable_pair(self) -> tuple[RunManifest, RunManifest]:
        """The two newest ended runs with results, of the newest such run's script and mode: (older, newer)."""
        ended = [row for row in self.list() if row.status.ended and row.result_files]
        if not ended:
            raise InputError(str(self.home), "no recorded run has result files to compare")
        newest, newer = None, None
        for row in ended:
            if newest is not None and (row.script, row.mode) != (newest.script, newest.mode):
                continue
            manifest = self.load_or_warn(row.id)
            if manifest is None:
                continue
            if newest is None:
                newest, newer = row, manifest
            else:
                return manifest, newer  # type: ignore[return-value]
        if newest is None:
            raise InputError(str(self.home), "no readable recorded run has result files to compare")
        raise InputError(newest.id, f"no earlier run of {newest.script} in {newest.mode} mode to compare with")

    # -- internals ------------------------------------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with closing(self._open()) as db:
            with db:  # one transaction; rolled back on any exception
                yield db

    def _open(self) -> sqlite3.Connection:
        """The index, rebuilt when it is missing, empty, of another shape or broken; read-only or in memory when it must."""
        try:
            self.home.mkdir(parents=True, exist_ok=True)
            return self._open_file()
        except sqlite3.OperationalError:  # read-only home, or the file cannot be opened for writing
            return self._open_read_only()
        except sqlite3.DatabaseError as error:  # not a database at all
            return self._replace_broken(error)
        except OSError:
            return self._open_read_only()

    def _open_file(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.db_path, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            if _columns(db) != _COLUMNS.split(", "):  # new, empty (0 bytes), or written by another version
                with db:
                    db.execute("DROP TABLE IF EXISTS runs")
                    db.executescript(_SCHEMA)
                self._reindex(db)
            return db
        except BaseException:
            db.close()
            raise

    def _replace_broken(self, error: sqlite3.DatabaseError) -> sqlite3.Connection:
        aside = self.db_path.with_name(f"{self.db_path.name}.broken-{secrets.token_hex(3)}")
        try:
            os.replace(self.db_path, aside)
            for suffix in ("-wal", "-shm"):
                Path(f"{self.db_path}{suffix}").unlink(missing_ok=True)
            self.warn(f"{self.db_path}: not a usable index ({error}); moved to {aside.name} and rebuilt from the manifests")
            return self._open_file()
        except (OSError, sqlite3.Error):
            self.warn(f"{self.db_path}: not a usable index ({error}); listing from the manifests")
            return self._in_memory()

    def _open_read_only(self) -> sqlite3.Connection:
        for options in ("mode=ro", "immutable=1"):
            try:
                db = sqlite3.connect(f"{self.db_path.resolve().as_uri()}?{options}", uri=True, timeout=30)
                if _columns(db) == _COLUMNS.split(", "):
                    return db
                db.close()
            except sqlite3.Error:
                continue
        return self._in_memory()

    def _in_memory(self) -> sqlite3.Connection:
        db = sqlite3.connect(":memory:")
        db.executescript(_SCHEMA)
        self._reindex(db)
        return db

    def _reindex(self, db: sqlite3.Connection) -> None:
        """Rebuild the index from the manifests on disk (a lost, emptied or broken runs.db)."""
        if not self.runs_dir.is_dir():
            return
        with db:
            for manifest_path in self.runs_dir.glob(f"*/{MANIFEST_NAME}"):
                try:
                    _upsert(db, RunManifest.model_validate_json(manifest_path.read_bytes()))
                except (OSError, ValidationError, ValueError):
                    self.warn(f"{manifest_path}: not a readable run manifest; left out of the index")

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
        return _row(_values(manifest))

    def _try_index(self, manifest: RunManifest) -> None:
        try:
            with self._connect() as db:
                _upsert(db, manifest)
        except sqlite3.Error:
            pass  # a read-only index: repaired by the next reader that can write

    def _settled_manifest(self, run_id: str) -> RunManifest:
        """The manifest, with a dead supervisor's run turned from running to abandoned (and recorded so)."""
        manifest = self.load(run_id)
        if manifest.status is RunStatus.RUNNING and not self._supervisor_alive(run_id):
            manifest.status = RunStatus.ABANDONED
            try:
                self.save(manifest)
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


def _where(where: RunFilter) -> tuple[str, list[object]]:
    clauses: list[str] = []
    values: list[object] = []
    if where.script:
        absolute = str(Path(where.script).resolve())
        clauses.append("(script = ? OR script = ? OR script LIKE ?)")
        values += [where.script, absolute, f"%/{where.script.lstrip('./')}"]
    if where.mode:
        clauses.append("mode = ?")
        values.append(where.mode)
    if where.status:
        clauses.append("status = ?")
        values.append(where.status.value)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", values


def _columns(db: sqlite3.Connection) -> list[str]:
    return [row[1] for row in db.execute("PRAGMA table_info(runs)")]


def _reserve(path: Path, size: int) -> None:
    """Allocate real blocks (not a sparse file) that can be given back when the disk is full."""
    low, high = RESERVE_BYTES
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.posix_fallocate(fd, 0, min(max(size, low), high))
    finally:
        os.close(fd)


def _compact(manifest: RunManifest) -> RunManifest:
    """The outcome without the bulky bank inventories, for a disk with no room left."""
    bank_before = manifest.bank_before.model_copy(update={"files": []})
    return manifest.model_copy(update={"bank_before": bank_before, "bank_after": None})


def _reason(error: BaseException) -> str:
    return error.strerror if isinstance(error, OSError) and error.strerror else str(error)


def _values(manifest: RunManifest) -> tuple[object, ...]:
    return (
        manifest.id,
        manifest.started_at.isoformat(),
        manifest.ended_at.isoformat() if manifest.ended_at else None,
        manifest.status.value,
        manifest.mode_label,
        manifest.script,
        manifest.device,
        manifest.exit_code,
        len(manifest.result_files),
        manifest.fingerprint.cann_version,
        manifest.fingerprint.soc,
    )


def _upsert(db: sqlite3.Connection, manifest: RunManifest) -> None:
    db.execute(f"INSERT OR REPLACE INTO runs ({_COLUMNS}) VALUES ({', '.join('?' * 11)})", _values(manifest))


def _row(values: tuple[object, ...]) -> RunRow:
    fields = dict(zip(_COLUMNS.split(", "), values, strict=True))
    fields["status"] = RunStatus(fields["status"])
    return RunRow(**fields)  # type: ignore[arg-type]
