"""The PostgreSQL schema is created and migrated by aoe-runner: from every earlier version, forward only."""

from __future__ import annotations

import psycopg
import pytest

from aoe_runner.common.jsontext import dump_json
from aoe_runner.errors import EnvironmentDrift
from aoe_runner.runs.index import RunFilter
from aoe_runner.runs.manifest import RunManifest
from aoe_runner.store import pg_schema
from aoe_runner.store.pg_index import PgIndex
from tests.store.conftest import as_host


def _schema(url: str) -> list[tuple[str, str, str]]:
    with psycopg.connect(url) as db:
        return list(
            db.execute(
                "SELECT table_name, column_name, data_type FROM information_schema.columns"
                " WHERE table_schema = 'public' ORDER BY table_name, column_name"
            )
        )


def _indexes(url: str) -> list[str]:
    with psycopg.connect(url) as db:
        return [row[0] for row in db.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname")]


@pytest.mark.parametrize("start", range(pg_schema.LATEST))
def test_every_earlier_version_migrates_to_the_latest_keeping_its_runs(start: int, pg_server, template: RunManifest) -> None:  # type: ignore[no-untyped-def]
    old, fresh = f"from_{start}", f"fresh_{start}"
    for name in (old, fresh):
        pg_server.sql(f"DROP DATABASE IF EXISTS {name}")
        pg_server.sql(f"CREATE DATABASE {name}")
    manifest = as_host(template, "20260101-000000-0000abcd", "host-a")
    with psycopg.connect(pg_server.url(old), autocommit=True) as db:
        pg_schema.migrate(db, target=start)
        if start >= 1:  # a run recorded by the aoe-runner of that version (from 2 on, with its host)
            host = ("host",) if start >= 2 else ()
            db.execute(
                f"INSERT INTO runs (id, started_at, status, kind, mode, script, script_name, device, result_files, manifest"
                f"{''.join(', ' + column for column in host)}) VALUES (%s, %s, 'succeeded', 'tune', 'op', %s, 'train.py', 0, 1,"
                f" %s::jsonb{', %s' * len(host)})",
                (manifest.id, manifest.started_at, manifest.script, dump_json(manifest), *(["host-a"] * len(host))),
            )
    PgIndex(pg_server.url(fresh), fresh).check_writable()
    index = PgIndex(pg_server.url(old), old)
    index.check_writable()
    assert _schema(pg_server.url(old)) == _schema(pg_server.url(fresh))
    assert _indexes(pg_server.url(old)) == _indexes(pg_server.url(fresh))
    rows = index.rows(RunFilter())
    if start >= 1:
        assert [(row.id, row.host) for row in rows] == [(manifest.id, "host-a")]  # the host was filled from the manifest
    else:
        assert rows == []


def test_a_database_newer_than_this_aoe_runner_is_refused_in_one_line(pg_url: str) -> None:
    index = PgIndex(pg_url, "the store")
    index.check_writable()
    index.close()
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("UPDATE aoe_runner_schema SET version = %s", (pg_schema.LATEST + 1,))
    with pytest.raises(EnvironmentDrift, match="newer than this aoe-runner knows"):
        PgIndex(pg_url, "the store").check_writable()


@pytest.mark.parametrize("isolation", ["read committed", "serializable"])
def test_two_hosts_migrating_at_once_run_each_step_once(pg_url: str, isolation: str) -> None:
    """Under the server's default isolation set to serializable, the second host's snapshot was taken before the lock
    it waited for, so it ran the steps the first had committed again ("relation runs already exists")."""
    from concurrent.futures import ThreadPoolExecutor

    with psycopg.connect(pg_url, autocommit=True) as db:
        database = db.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        db.execute(f"ALTER DATABASE {database} SET default_transaction_isolation = '{isolation}'")

    def open_one(_: int) -> None:
        PgIndex(pg_url, "the store").check_writable()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(open_one, range(4)))
    with psycopg.connect(pg_url) as db:
        assert db.execute("SELECT version FROM aoe_runner_schema").fetchall() == [(pg_schema.LATEST,)]
