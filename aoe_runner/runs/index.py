"""`runs.db`: the SQLite index of the run manifests, which `runs list` and every shortcut read.

The manifests are the record; the index is only a fast view of them. It is rebuilt from them whenever
it is missing, empty, of another shape (a newer or older aoe-runner: that is the whole migration) or not
a database at all (the broken file is moved aside first). Reading never needs to write: on a read-only
home the index is opened read-only, and failing that it is built in memory from the manifests.
"""

from __future__ import annotations

import math
import os
import secrets
import sqlite3
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from aoe_runner.common.regular_files import mode_kind
from aoe_runner.runs.row_checks import damage
from aoe_runner.runs.status import RunStatus

if TYPE_CHECKING:
    from aoe_runner.runs.manifest import RunManifest

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    status TEXT NOT NULL,
    kind TEXT NOT NULL,
    mode TEXT NOT NULL,
    script TEXT NOT NULL,
    script_name TEXT NOT NULL,
    device INTEGER NOT NULL,
    exit_code INTEGER,
    result_files INTEGER NOT NULL,
    cann_version TEXT,
    soc TEXT,
    bank_before TEXT,
    bank_after TEXT,
    host TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_start ON runs (started_at DESC);
CREATE INDEX IF NOT EXISTS runs_by_script ON runs (script, mode, started_at DESC);
CREATE INDEX IF NOT EXISTS runs_by_script_name ON runs (script_name, started_at DESC);
"""
# Each ended tuning run's gain (runs/outcomes.py), kept so that listing runs reads no result file twice. Keyed by the
# run's end: a record ended again (an abandoned run settled) is measured again. Not part of the index's shape: a
# rebuild keeps it, and an index that cannot hold it (read-only, in memory) only measures every time.
_GAINS_SCHEMA = """
CREATE TABLE IF NOT EXISTS gains (
    run_id TEXT PRIMARY KEY,
    ended_at TEXT NOT NULL,
    saved_us REAL,
    median_speedup REAL
);
"""
_COLUMNS = (
    "id, started_at, ended_at, status, kind, mode, script, script_name, device, exit_code, result_files, cann_version, soc, "
    "bank_before, bank_after, host"
)
_COLUMN_NAMES = _COLUMNS.split(", ")


@dataclass(frozen=True)
class RunRow:
    """One line of the index: what `runs list` shows."""

    id: str
    started_at: str
    ended_at: str | None
    status: RunStatus
    kind: str
    mode: str
    script: str
    script_name: str
    device: int
    exit_code: int | None
    result_files: int
    cann_version: str | None
    soc: str | None
    bank_before: str | None  # the ids of the run's bank inventories in the store, when stored there
    bank_after: str | None
    host: str | None  # the host that recorded the run


@dataclass(frozen=True)
class RunFilter:
    """Which runs: `script` is a path (matched exactly, resolved) or a bare file name (every script of that name)."""

    script: str | None = None
    mode: str | None = None
    status: RunStatus | None = None
    kind: str | None = None
    limit: int | None = None
    host: str | None = None
    soc: str | None = None


ManifestSource = Callable[[], Iterable["RunManifest"]]


class Index(Protocol):
    """What the run store asks of its index: this SQLite file, or a shared store (aoe_runner.store.shared)."""

    def upsert(self, manifest: RunManifest) -> None: ...
    def upsert_all(self, manifests: list[RunManifest]) -> None: ...
    def check_writable(self) -> None: ...
    def rows(self, where: RunFilter) -> list[RunRow]: ...
    def ids_starting_with(self, prefix: str, limit: int = 3) -> list[str]: ...
    def all_ids(self) -> set[str]: ...
    def delete(self, ids: list[str]) -> None: ...


class RunIndex:
    def __init__(self, path: Path, manifests: ManifestSource, warn: Callable[[str], None], runs_dir: Path | None = None) -> None:
        self.path = path
        self.runs_dir = runs_dir  # where each row's manifest must be (None: not checked)
        self._manifests = manifests  # every readable manifest on disk, for a rebuild
        self._warn = warn
        self._checked = False  # the file's pages were checked once (quick_check reads them all)

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """One transaction on the index, rolled back on any exception."""
        with closing(self._open()) as db:
            with db:
                yield db

    def check_writable(self) -> None:
        """Raise sqlite3.Error or OSError when a run could not be indexed here."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._open()) as db:
            db.execute("BEGIN IMMEDIATE")  # fails on an index opened read-only
            db.execute("ROLLBACK")

    def upsert(self, manifest: RunManifest) -> None:
        self.upsert_all([manifest])

    def upsert_all(self, manifests: list[RunManifest]) -> None:
        """In one transaction."""
        with self.connect() as db:
            for manifest in manifests:
                _upsert(db, manifest)

    def rows(self, where: RunFilter) -> list[RunRow]:
        """The matching runs, newest first. A row no manifest wrote (edited by hand, or whose run directory was
        removed by hand) makes the index be rebuilt from the manifests, with a warning; where it cannot be (a
        read-only index), such rows are left out."""
        clauses, values = _where(where)
        query = f"SELECT {_COLUMNS} FROM runs {clauses} ORDER BY started_at DESC, id DESC"
        if where.limit is not None:
            query += f" LIMIT {int(where.limit)}"
        checked = self._checked_rows(query, values)
        problems = [problem for _, problem in checked if problem is not None]
        if problems:
            self._rebuild(problems[0], len(problems))
            checked = self._checked_rows(query, values)
        return [_row(row) for row, problem in checked if problem is None]

    def _checked_rows(self, query: str, values: list[object]) -> list[tuple[tuple[object, ...], str | None]]:
        """The rows the query finds, each with what makes it no manifest's row (row_checks.damage), if anything."""
        with self.connect() as db:
            found = db.execute(query, values).fetchall()
        return [(row, damage(dict(zip(_COLUMN_NAMES, row, strict=True)), self.runs_dir)) for row in found]

    def all_ids(self) -> set[str]:
        with self.connect() as db:
            return {row[0] for row in db.execute("SELECT id FROM runs")}

    def delete(self, ids: list[str]) -> None:
        with self.connect() as db:
            db.executemany("DELETE FROM runs WHERE id = ?", [(run_id,) for run_id in ids])
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'gains'").fetchone():
                db.executemany("DELETE FROM gains WHERE run_id = ?", [(run_id,) for run_id in ids])

    def known_gains(self, rows: Iterable[RunRow]) -> dict[str, tuple[float | None, float | None]]:
        """The kept (time saved, median speed-up) of those ended runs whose end they were measured at."""
        ended = {row.id: row.ended_at for row in rows if row.ended_at is not None}
        if not ended:
            return {}
        try:
            with self.connect() as db:
                marks = ", ".join("?" * len(ended))
                found = db.execute(
                    f"SELECT run_id, ended_at, saved_us, median_speedup FROM gains WHERE run_id IN ({marks})", list(ended)
                ).fetchall()
        except sqlite3.OperationalError:  # no gains table: none kept yet, or an index that cannot hold one
            return {}
        return {
            run_id: (saved, speedup)
            for run_id, end, saved, speedup in found
            if ended.get(run_id) == end and _figure(saved) and _figure(speedup)  # else measured again
        }

    def keep_gains(self, measured: dict[str, tuple[str, float | None, float | None]]) -> None:
        """Keep each run's (end, time saved, median speed-up); an index that cannot be written keeps nothing."""
        if not measured:
            return
        try:
            with self.connect() as db:
                db.executescript(_GAINS_SCHEMA)
                db.executemany(
                    "INSERT OR REPLACE INTO gains (run_id, ended_at, saved_us, median_speedup) VALUES (?, ?, ?, ?)",
                    [(run_id, *values) for run_id, values in measured.items()],
                )
        except sqlite3.Error:
            return

    def ids_starting_with(self, prefix: str, limit: int = 3) -> list[str]:
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self.connect() as db:
            found = db.execute("SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' LIMIT ?", (pattern, limit))
            return [row[0] for row in found if row[0].startswith(prefix)]  # LIKE ignores case; ids do not

    # -- opening and repairing ------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        special = self._special_file()
        if special is not None:  # SQLite would wait forever on a FIFO: never opened, set aside like any non-database
            return self._replace_broken(sqlite3.DatabaseError(special))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return self._open_file()
        except sqlite3.OperationalError:  # a read-only home, or a file that cannot be opened for writing
            return self._open_read_only()
        except sqlite3.DatabaseError as error:  # not a database at all
            return self._replace_broken(error)
        except OSError:
            return self._open_read_only()

    def _special_file(self) -> str | None:
        """What makes runs.db, or the journal files SQLite opens beside it, something other than a file, if anything."""
        for path in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
            try:
                mode = os.stat(path).st_mode
            except OSError:  # missing (SQLite creates it), or a symlink loop, which SQLite refuses at once
                continue
            if not stat.S_ISREG(mode):
                return f"{path.name} is {mode_kind(mode)}, not a file"
        return None

    def _open_file(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            if not self._checked:
                if db.execute("PRAGMA quick_check(1)").fetchone()[0] != "ok":  # a damaged page past the header
                    raise sqlite3.DatabaseError("database disk image is malformed")
                self._checked = True
            if _columns(db) != _COLUMN_NAMES:  # new, empty (0 bytes), or written by another version
                with db:
                    db.execute("DROP TABLE IF EXISTS runs")
                    db.executescript(_SCHEMA)
                self._reindex(db)
            return db
        except BaseException:
            db.close()
            raise

    def _replace_broken(self, error: sqlite3.DatabaseError) -> sqlite3.Connection:
        aside = self.path.with_name(f"{self.path.name}.broken-{secrets.token_hex(3)}")
        try:
            os.replace(self.path, aside)
            for suffix in ("-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            self._warn(f"{self.path}: not a usable index ({error}); moved to {aside.name} and rebuilt from the manifests")
            return self._open_file()
        except (OSError, sqlite3.Error):
            self._warn(f"{self.path}: not a usable index ({error}); listing from the manifests")
            return self._in_memory()

    def _open_read_only(self) -> sqlite3.Connection:
        for options in ("mode=ro", "immutable=1"):
            try:
                db = sqlite3.connect(f"{self.path.resolve().as_uri()}?{options}", uri=True, timeout=30)
                if _columns(db) == _COLUMN_NAMES:
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

    def _rebuild(self, problem: str, count: int) -> None:
        more = f" (and {count - 1} more)" if count > 1 else ""
        try:
            with self.connect() as db:
                db.execute("DELETE FROM runs")
                for manifest in self._manifests():
                    _upsert(db, manifest)
        except sqlite3.Error as error:
            self._warn(f"{self.path}: {problem}{more}: left out; the index could not be rebuilt ({error})")
            return
        self._warn(f"{self.path}: {problem}{more}: rebuilt the index from the manifests")

    def _reindex(self, db: sqlite3.Connection) -> None:
        with db:
            for manifest in self._manifests():
                _upsert(db, manifest)


def _figure(value: object) -> bool:
    """A kept figure as keep_gains writes it: a finite number, or none (a row edited by hand is measured again)."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))


def conditions(where: RunFilter) -> list[tuple[str, object]]:
    """(column, value) pairs that a run must match, for any backend's WHERE clause."""
    found: list[tuple[str, object]] = []
    if where.script:
        if os.sep in where.script or os.path.exists(where.script):  # pathlib's exists() raises for a name too long
            found.append(("script", str(Path(where.script).resolve())))
        else:
            found.append(("script_name", where.script))
    status = where.status and where.status.value
    exact = (("mode", where.mode), ("status", status), ("kind", where.kind), ("host", where.host), ("soc", where.soc))
    for column, value in exact:
        if value:
            found.append((column, value))
    return [(column, storable(value)) for column, value in found]  # as values_of stores them


def _where(where: RunFilter) -> tuple[str, list[object]]:
    found = conditions(where)
    clauses = [f"{column} = ?" for column, _ in found]
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", [value for _, value in found]


def _columns(db: sqlite3.Connection) -> list[str]:
    return [row[1] for row in db.execute("PRAGMA table_info(runs)")]


def values_of(manifest: RunManifest) -> tuple[object, ...]:
    return tuple(storable(value) for value in _values(manifest))


def storable(value: object) -> object:
    """A value a database takes: a lone surrogate (a non-UTF-8 byte of a file name, as Python decodes it) as its
    escape, an integer beyond 64 bits as text.

    The manifest keeps the exact name; the index, which lists and filters, keeps this form of it.
    """
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode()
    if isinstance(value, int) and not -(2**63) <= value < 2**63:  # a hand-edited device 10**30: SQLite's integers end here
        return str(value)
    return value


def _values(manifest: RunManifest) -> tuple[object, ...]:
    return (
        manifest.id,
        manifest.started_at.isoformat(),
        manifest.ended_at.isoformat() if manifest.ended_at else None,
        manifest.status.value,
        manifest.kind,
        manifest.mode_label,
        manifest.script,
        os.path.basename(manifest.script),
        manifest.device,
        manifest.exit_code,
        len(manifest.result_files),
        manifest.fingerprint.cann_version,
        manifest.fingerprint.soc,
        manifest.bank_before.stored,
        manifest.bank_after.stored if manifest.bank_after else None,
        manifest.fingerprint.hostname,
    )


def row_of(manifest: RunManifest) -> RunRow:
    return _row(values_of(manifest))


def _upsert(db: sqlite3.Connection, manifest: RunManifest) -> None:
    placeholders = ", ".join("?" * len(_COLUMN_NAMES))
    db.execute(f"INSERT OR REPLACE INTO runs ({_COLUMNS}) VALUES ({placeholders})", values_of(manifest))


def _row(values: tuple[object, ...]) -> RunRow:
    fields = dict(zip(_COLUMN_NAMES, values, strict=True))
    fields["status"] = RunStatus(fields["status"])
    return RunRow(**fields)  # type: ignore[arg-type]
