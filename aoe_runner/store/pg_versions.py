"""Published bank versions in the shared store (`bank_versions`): numbered per name by the database, so two hosts
publishing the same name at once get two numbers, never one."""

from __future__ import annotations

from collections.abc import Callable

from aoe_runner.store import pg_schema
from aoe_runner.store.pg_index import WRITE_LIMIT_S, PgIndex

VERSION_LOCK = 0x6A0E_0045  # pg_advisory_xact_lock(VERSION_LOCK, hashtext(name)): one publish of a name at a time


def publish_version(index: PgIndex, name: str, host: str, published_at: str, record: Callable[[int], str]) -> int:
    """Insert version max+1 of `name` (its JSON made by `record` once the number is known); returns the number."""
    with index.transaction(WRITE_LIMIT_S) as db:
        pg_schema.refuse_newer(pg_schema.version(db) or 0)
        db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (VERSION_LOCK, name))
        row = db.execute("SELECT COALESCE(max(number), 0) + 1 FROM bank_versions WHERE name = %s", (name,)).fetchone()
        number = int(row[0]) if row else 1
        db.execute(
            "INSERT INTO bank_versions (name, number, published_at, host, record) VALUES (%s, %s, %s, %s, %s::jsonb)",
            (name, number, published_at, host, record(number)),
        )
    return number


def version_records(index: PgIndex, name: str | None = None) -> list[str]:
    """Every version's JSON (of one name, or all), by name then number."""
    query = "SELECT record::text FROM bank_versions"
    query += " WHERE name = %s ORDER BY number" if name is not None else " ORDER BY name, number"
    with index.transaction() as db:
        return [row[0] for row in db.execute(query, (name,) if name is not None else ())]
