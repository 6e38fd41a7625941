"""The shared run index on PostgreSQL: one row and the whole manifest per run, for every host of a team.

Rows have the local index's columns (runs/index.py) plus the host that recorded the run and where its artifacts are.
Writes are upserts by run id, so recording or pushing a run twice leaves one row. Every psycopg error becomes a
StoreUnavailable whose message has passed through secrets.scrub(): psycopg may quote the connection string.

No use of the store can wait for ever: connecting gives up after CONNECT_TIMEOUT_S, the server gives up a statement
after a use's limit (WRITE_LIMIT_S, READ_LIMIT_S) and a lock wait after LOCK_LIMIT_S, and a server that stops
answering at all (stopped, cut off by the network) has the connection cut from our side WATCHDOG_MARGIN_S later.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from aoe_runner.errors import ExitCode, InputError
from aoe_runner.runs.index import _COLUMN_NAMES, RunFilter, RunRow, conditions, storable, values_of
from aoe_runner.runs.status import RunStatus
from aoe_runner.store import pg_schema, secrets

if TYPE_CHECKING:
    import psycopg

    from aoe_runner.runs.manifest import RunManifest
    from aoe_runner.runs.outcomes import OperatorResult

_RAN_OUT_OF_TIME = ("QueryCanceled", "LockNotAvailable", "ConnectionTimeout")  # psycopg.errors: a limit was reached
CONNECT_TIMEOUT_S = 5  # unless the URL or PGCONNECT_TIMEOUT says otherwise
WRITE_LIMIT_S = 10  # recording a run: tune and verify wait no longer than this for the store, per write
READ_LIMIT_S = 60  # reading commands
LOCK_LIMIT_S = 5  # waiting for a lock another session holds (a `LOCK TABLE runs` left open)
WATCHDOG_MARGIN_S = 3  # after a use's limit, how long the server has to say it gave up before we cut the connection
_TIMES = ("started_at", "ended_at")
_STORED = (*_COLUMN_NAMES, "artifacts", "manifest", "results_recorded")


def _quiet_psycopg() -> None:
    """psycopg logs what it ignores while closing a connection our watchdog cut ("error ignored terminating
    <psycopg.Pipeline [BAD]>"): the one warning we give says all of it."""
    logger = logging.getLogger("psycopg")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


_quiet_psycopg()


class StoreUnavailable(InputError):
    """The shared store cannot be reached or used: one line, exit 4 (an input that cannot be read)."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(
        self, where: str, message: str, timed_out: bool = False, rejected: bool = False, unreachable: bool = False
    ) -> None:
        super().__init__(where, message)
        self.timed_out = timed_out  # it used up a limit: asking again at once would wait as long again
        self.rejected = rejected  # the server refused what was sent (its data), not the connection: others may pass
        self.unreachable = unreachable  # no server answered (down, no route, no answer in time); not a refusal


class PgIndex:
    def __init__(self, url: str, shown: str, warn: Callable[[str], None] = lambda message: None) -> None:
        self.url = url
        self.shown = shown  # the URL without its password, for messages
        self.warn = warn  # told of each row that cannot be read (skipped)
        self._connection: psycopg.Connection | None = None

    # -- writing --------------------------------------------------------------------------------

    def record(self, manifest: RunManifest, artifacts: str, results: Sequence[OperatorResult] = ()) -> None:
        """Insert or replace the run's row, manifest and operator results, in one transaction."""
        values = [*(_text(value) for value in values_of(manifest)), artifacts, stored_manifest(manifest), True]
        placeholders = ", ".join(["%s"] * (len(values) - 2) + ["%s::jsonb", "%s"])
        updates = ", ".join(f"{column} = EXCLUDED.{column}" for column in _STORED[1:])
        with self.transaction(WRITE_LIMIT_S) as db:
            pg_schema.refuse_newer(pg_schema.version(db) or 0)  # upgraded since we connected: not ours to write
            db.execute(
                f"INSERT INTO runs ({', '.join(_STORED)}) VALUES ({placeholders}) ON CONFLICT (id) DO UPDATE SET {updates}",
                values,
            )
            db.execute("DELETE FROM run_results WHERE run_id = %s", (manifest.id,))
            with db.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO run_results (run_id, kind, name, tuned_us, baseline_us, speedup)"
                    " VALUES (%s, %s, %s, %s, %s, %s)",
                    result_rows(manifest.id, results),
                )

    def delete(self, ids: list[str]) -> None:
        with self.transaction(WRITE_LIMIT_S) as db:
            db.execute("DELETE FROM runs WHERE id = ANY(%s)", (ids,))

    def record_campaign(self, campaign_id: str, name: str, host: str, started_at: str, ended_at: str | None, text: str) -> None:
        """Insert or replace a campaign's record (its JSON as campaign.json holds it)."""
        with self.transaction(WRITE_LIMIT_S) as db:
            pg_schema.refuse_newer(pg_schema.version(db) or 0)
            db.execute(
                "INSERT INTO campaigns (id, name, host, started_at, ended_at, record) VALUES (%s, %s, %s, %s, %s, %s::jsonb)"
                " ON CONFLICT (id) DO UPDATE SET ended_at = EXCLUDED.ended_at, record = EXCLUDED.record",
                (campaign_id, name, host, started_at, ended_at, text),
            )

    def campaign_records(self) -> list[str]:
        """Every campaign's record as JSON text, oldest first."""
        with self.transaction() as db:
            return [row[0] for row in db.execute("SELECT record::text FROM campaigns ORDER BY started_at, id")]

    # -- reading --------------------------------------------------------------------------------

    def rows(self, where: RunFilter) -> list[RunRow]:
        found = conditions(where)
        clauses = " AND ".join(f"{column} = %s" for column, _ in found)
        query = f"SELECT {', '.join(_COLUMN_NAMES)} FROM runs {'WHERE ' + clauses if clauses else ''}"
        query += " ORDER BY started_at DESC, id DESC"
        if where.limit is not None:
            query += f" LIMIT {int(where.limit)}"
        with self.transaction() as db:
            found_rows = list(db.execute(query, [value for _, value in found]))
        rows = []
        for values in found_rows:
            try:
                rows.append(_row(values))
            except ValueError as error:  # a row changed by hand, or by an aoe-runner that knows more states
                self.warn(f"{values[0]}: its row in the run store cannot be read ({error}); skipped")
        return rows

    def manifest(self, run_id: str) -> tuple[RunManifest, str | None] | None:
        """The run's manifest and where its artifacts are, or None when the store has no such run."""
        from aoe_runner.common.jsontext import load_json
        from aoe_runner.runs.manifest import RunManifest
        from aoe_runner.runs.record_files import manifest_problem

        with self.transaction() as db:
            found = db.execute("SELECT manifest::text, artifacts FROM runs WHERE id = %s", (run_id,)).fetchone()
        if found is None:
            return None
        try:
            return load_json(RunManifest, found[0].encode()), found[1]
        except ValueError as error:  # changed by hand, or written by an aoe-runner that knows more
            raise InputError(run_id, f"its record in the run store cannot be read ({manifest_problem(error)})") from None

    def versions(self, ids: list[str]) -> dict[str, tuple[str, str | None]]:
        """status and end time of those of `ids` the store holds with their operator results, to tell what a push
        must send (a run recorded before the store kept results, schema version 3, is sent again for them)."""
        with self.transaction() as db:
            found = db.execute("SELECT id, status, ended_at FROM runs WHERE id = ANY(%s) AND results_recorded", (ids,))
            return {run_id: (status, ended.isoformat() if ended else None) for run_id, status, ended in found}

    def all_ids(self) -> set[str]:
        with self.transaction() as db:
            return {row[0] for row in db.execute("SELECT id FROM runs")}

    def ids_starting_with(self, prefix: str, limit: int = 3) -> list[str]:
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self.transaction() as db:
            found = db.execute("SELECT id FROM runs WHERE id LIKE %s ORDER BY id LIMIT %s", (pattern, limit))
            return [row[0] for row in found]

    def query(self, sql: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self.transaction() as db:
            return list(db.execute(sql, values))

    def check_writable(self) -> None:
        with self.transaction(WRITE_LIMIT_S) as db:
            db.execute("SELECT 1 FROM runs LIMIT 0")

    # -- connecting -----------------------------------------------------------------------------

    @contextmanager
    def transaction(self, limit_s: float = READ_LIMIT_S) -> Iterator[psycopg.Connection]:
        """One transaction, given up after limit_s; any psycopg error is a StoreUnavailable with a scrubbed message."""
        import psycopg

        watchdog = _Watchdog(limit_s + WATCHDOG_MARGIN_S)
        try:
            db = self._connect(watchdog, limit_s)
            with watchdog.guarding(db), db.transaction():
                db.execute(
                    "SELECT set_config('statement_timeout', %s, true), set_config('lock_timeout', %s, true)", _limits(limit_s)
                )
                yield db
        except (psycopg.Error, UnicodeError) as error:  # UnicodeError: text the connection's encoding cannot hold
            self.close()
            reason = f"no answer from the server in {watchdog.after_s:g} s" if watchdog.fired else _reason(error)
            timed_out = watchdog.fired or any(isinstance(error, getattr(psycopg.errors, name, ())) for name in _RAN_OUT_OF_TIME)
            rejected = isinstance(error, (psycopg.DataError, psycopg.IntegrityError, UnicodeError))
            unreachable = timed_out or (
                isinstance(error, psycopg.OperationalError) and error.sqlstate is None and not _CREDENTIALS.search(reason)
            )
            raise StoreUnavailable(f"run store {self.shown}", reason, timed_out, rejected, unreachable) from None

    def _connect(self, watchdog: _Watchdog, limit_s: float) -> psycopg.Connection:
        """The connection, opened again when the server went away since its last use (a restart during a run).

        The session's own settings are set after connecting, so that the URL's `options` and PGOPTIONS keep the
        others: UTF-8 (text as bytes on a SQL_ASCII database, encoding errors on a LATIN1 one), times in UTC and ISO
        (psycopg cannot read other DateStyles), floats in full, limits for the schema check and migration too, and
        READ COMMITTED whatever the server's default (a migration must see what the one before it committed)."""
        import psycopg

        if self._connection is not None and not self._alive(self._connection, watchdog):
            self.close()
            if watchdog.fired:  # the server took our bytes and said nothing: a new connection would wait as long
                raise psycopg.OperationalError("no answer")
        if self._connection is None:
            from psycopg.conninfo import conninfo_to_dict

            timeout: dict[str, Any] = {}
            if "connect_timeout" not in conninfo_to_dict(self.url) and not os.environ.get("PGCONNECT_TIMEOUT"):
                timeout["connect_timeout"] = CONNECT_TIMEOUT_S
            connection = psycopg.connect(self.url, autocommit=True, client_encoding="UTF8", **timeout)
            try:
                connection.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
                with watchdog.guarding(connection):
                    connection.execute(
                        "SELECT set_config('TimeZone', 'UTC', false), set_config('DateStyle', 'ISO', false),"
                        " set_config('extra_float_digits', '3', false), set_config('statement_timeout', %s, false),"
                        " set_config('lock_timeout', %s, false)",
                        _limits(limit_s),
                    )
                    if pg_schema.version_if_any(connection) != pg_schema.LATEST:
                        pg_schema.migrate(connection)
            except BaseException:
                connection.close()  # a connection that failed a check is never used: the next use checks again
                raise
            self._connection = connection
        return self._connection

    @staticmethod
    def _alive(db: psycopg.Connection, watchdog: _Watchdog) -> bool:
        import psycopg

        if db.closed or db.broken:
            return False
        try:
            with watchdog.guarding(db):
                db.execute("SELECT 1")
            return True
        except psycopg.OperationalError:
            return False

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class _Watchdog:
    """Cuts a connection's socket when a use of it outlasts `after_s`: the wait in progress then fails at once.

    The server's own limits come first; this is for a server that no longer answers at all, where they cannot act, and
    psycopg, waiting on the socket, would wait for ever (even through Ctrl-C: its cancel request goes unanswered too).
    """

    def __init__(self, after_s: float) -> None:
        self.after_s = after_s
        self.fired = False
        self._lock = threading.Lock()
        self._socket_fd = -1

    @contextmanager
    def guarding(self, db: psycopg.Connection) -> Iterator[None]:
        self._socket_fd = db.pgconn.socket
        timer = threading.Timer(self.after_s, self._cut)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            with self._lock:
                timer.cancel()
                self._socket_fd = -1  # a timer already running finds nothing to cut

    def _cut(self) -> None:
        with self._lock:
            if self._socket_fd < 0:
                return
            self.fired = True
            try:
                with socket.socket(fileno=os.dup(self._socket_fd)) as connection:
                    connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed: the wait has ended anyway


def _limits(limit_s: float) -> tuple[str, str]:
    """statement_timeout and lock_timeout for a use given up after limit_s."""
    return f"{int(limit_s * 1000)}ms", f"{LOCK_LIMIT_S * 1000}ms"


def _row(values: tuple[Any, ...]) -> RunRow:
    fields = dict(zip(_COLUMN_NAMES, values, strict=True))
    for name in _TIMES:
        fields[name] = fields[name].isoformat() if fields[name] is not None else None
    fields["status"] = RunStatus(fields["status"])
    return RunRow(**fields)


_CREDENTIALS = re.compile(r"password|authentication|certificate|SSL", re.IGNORECASE)  # refused by the server, or by libpq


def _reason(error: BaseException) -> str:
    """psycopg's message in one line, without a password."""
    text = " ".join(str(error).split()) or type(error).__name__
    return secrets.scrub(text)


MAX_NAME_CHARACTERS = 600  # at 4 bytes a character, under the 2,704 bytes of a PostgreSQL index row


def result_rows(run_id: str, results: Sequence[Any]) -> list[tuple[Any, ...]]:
    """run_results' rows of a run: each name as the database can take it (stored_name), one row per kind and name
    (the first: two operators whose labels read the same, op types ["A", "B"] and "A+B", are one entry there)."""
    rows: dict[tuple[str, str], tuple[Any, ...]] = {}
    for r in results:
        name = stored_name(r.name)
        rows.setdefault((r.kind, name), (run_id, r.kind, name, r.tuned_us, r.baseline_us, r.speedup))
    return list(rows.values())


def stored_manifest(manifest: RunManifest) -> str:
    """The manifest as jsonb takes it: JSON with a lone surrogate (a script or file name that is not UTF-8) and NUL
    (a log line quoted in its markers) written as their escapes in text, as the index columns hold them; jsonb
    refuses the `\\udcff` and `\\u0000` JSON escapes themselves."""
    from aoe_runner.common.jsontext import dump_json

    text = dump_json(manifest, indent=None)
    if "\\ud" not in text and "\\u0000" not in text:
        return text
    import json

    return json.dumps(_storable_strings(json.loads(text)), ensure_ascii=False, separators=(",", ":"))


def _storable_strings(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list):
        return [_storable_strings(item) for item in value]
    if isinstance(value, dict):
        return {_text(key): _storable_strings(item) for key, item in value.items()}
    return value


def _text(value: Any) -> Any:
    """A value as PostgreSQL text takes it: a lone surrogate and NUL as their escapes."""
    stored = storable(value)
    return stored.replace("\x00", "\\x00") if isinstance(stored, str) else stored


def stored_name(name: str) -> str:
    """A name as PostgreSQL text and its index take it: a lone surrogate and NUL escaped, and a name too long for
    an index row cut, with a hash of the whole name so that two long names stay apart."""
    text = str(_text(name))
    if len(text) <= MAX_NAME_CHARACTERS:
        return text
    from hashlib import sha256

    return f"{text[: MAX_NAME_CHARACTERS - 20]}...{sha256(text.encode()).hexdigest()[:16]}"
