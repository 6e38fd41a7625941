"""The run history: one directory per run under the aoe-runner home, indexed by one SQLite file.

`runs/<id>/manifest.json` is the record; `runs.db` (WAL) is an index of it that can be rebuilt from
the manifests, and is rebuilt when it is missing. A running run's supervisor holds an flock on
`runs/<id>/supervisor.lock`; a run marked running whose lock nobody holds lost its supervisor and is
marked abandoned the next time the history is read.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from aoe_runner.errors import InputError
from aoe_runner.fsutil import atomic_write_text
from aoe_runner.runs.manifest import MANIFEST_NAME, RunManifest, RunStatus

SUPERVISOR_LOCK = "supervisor.lock"
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
    def __init__(self, home: Path) -> None:
        self.home = home
        self.runs_dir = home / "runs"
        self.db_path = home / "runs.db"

    # -- writing --------------------------------------------------------------------------------

    def ensure_writable(self) -> None:
        """Fail with one clear line, before anything is launched, when the home cannot hold a run."""
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            probe = self.runs_dir / f".write-test-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
            with self._connect():
                pass
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
        return [self.load(row.id) for row in self.list(RunFilter(status=RunStatus.RUNNING))]

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
        newest = ended[0]
        for row in ended[1:]:
            if row.script == newest.script and row.mode == newest.mode:
                return self.load(row.id), self.load(newest.id)
        raise InputError(newest.id, f"no earlier run of {newest.script} in {newest.mode} mode to compare with")

    # -- internals ------------------------------------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self.home.mkdir(parents=True, exist_ok=True)
        created = not self.db_path.exists()
        with closing(sqlite3.connect(self.db_path, timeout=30)) as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            if created:
                self._reindex(db)
            with db:  # one transaction; rolled back on any exception
                yield db

    def _reindex(self, db: sqlite3.Connection) -> None:
        """Rebuild the index from the manifests on disk (a lost or deleted runs.db)."""
        if not self.runs_dir.is_dir():
            return
        with db:
            for manifest_path in self.runs_dir.glob(f"*/{MANIFEST_NAME}"):
                try:
                    _upsert(db, RunManifest.model_validate_json(manifest_path.read_bytes()))
                except (OSError, ValidationError):
                    continue  # a broken record stays on disk for a human to look at

    def _settle(self, row: RunRow) -> RunRow:
        """A row indexed as running, checked against its supervisor and its manifest."""
        if self._supervisor_alive(row.id):
            return row
        manifest = self._settled_manifest(row.id)
        if manifest.status.ended and manifest.status is not RunStatus.ABANDONED:
            with self._connect() as db:  # the end was written but not indexed before a crash
                _upsert(db, manifest)
        return _row(_values(manifest))

    def _settled_manifest(self, run_id: str) -> RunManifest:
        """The manifest, with a dead supervisor's run turned from running to abandoned (and recorded so)."""
        manifest = self.load(run_id)
        if manifest.status is RunStatus.RUNNING and not self._supervisor_alive(run_id):
            manifest.status = RunStatus.ABANDONED
            self.save(manifest)
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
