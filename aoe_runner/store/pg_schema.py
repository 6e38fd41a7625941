"""The PostgreSQL store's schema, created and migrated by aoe-runner itself: numbered steps, forward only.

`aoe_runner_schema` holds the version reached. Every host that opens the store brings it up to the newest version it
knows, one step per transaction, under an advisory lock so that two hosts starting at once never run a step twice.
A database newer than this aoe-runner is refused with one line: a step is never undone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aoe_runner.errors import EnvironmentDrift

if TYPE_CHECKING:
    import psycopg

MIGRATION_LOCK = 0x6A0E_0017  # pg_advisory_xact_lock key: aoe-runner
MIGRATIONS: tuple[str, ...] = (
    # 1: the run index and the manifests
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        started_at TIMESTAMPTZ NOT NULL,
        ended_at TIMESTAMPTZ,
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
        manifest JSONB NOT NULL
    );
    CREATE INDEX runs_by_start ON runs (started_at DESC, id DESC);
    CREATE INDEX runs_by_script_name ON runs (script_name, started_at DESC);
    """,
    # 2: which host recorded a run, and where its artifacts are
    """
    ALTER TABLE runs ADD COLUMN host TEXT;
    ALTER TABLE runs ADD COLUMN artifacts TEXT;
    UPDATE runs SET host = manifest->'fingerprint'->>'hostname' WHERE host IS NULL;
    ALTER TABLE runs ALTER COLUMN host SET NOT NULL;
    CREATE INDEX runs_by_host ON runs (host, started_at DESC);
    CREATE INDEX runs_by_soc ON runs (soc, started_at DESC);
    """,
    # 3: each operator's tuned result, for `bank best`
    """
    CREATE TABLE run_results (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        tuned_us DOUBLE PRECISION,
        baseline_us DOUBLE PRECISION,
        speedup DOUBLE PRECISION,
        PRIMARY KEY (run_id, kind, name)
    );
    CREATE INDEX run_results_by_name ON run_results (kind, name);
    """,
    # 4: whether a run's operator results were recorded with it: runs of versions 1 and 2 were recorded without, and
    # `runs push` sends them again for their results
    """
    ALTER TABLE runs ADD COLUMN results_recorded BOOLEAN NOT NULL DEFAULT false;
    UPDATE runs SET results_recorded = true WHERE EXISTS (SELECT 1 FROM run_results WHERE run_results.run_id = runs.id);
    """,
    # 5: campaigns (`campaign run`): each record whole, as campaign.json holds it
    """
    CREATE TABLE campaigns (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        host TEXT NOT NULL,
        started_at TIMESTAMPTZ NOT NULL,
        ended_at TIMESTAMPTZ,
        record JSONB NOT NULL
    );
    CREATE INDEX campaigns_by_start ON campaigns (started_at DESC, id DESC);
    """,
    # 6: published bank versions (`bank publish`): numbered per name, each record whole, as releases/ keeps it
    """
    CREATE TABLE bank_versions (
        name TEXT NOT NULL,
        number INTEGER NOT NULL CHECK (number > 0),
        published_at TIMESTAMPTZ NOT NULL,
        host TEXT NOT NULL,
        record JSONB NOT NULL,
        PRIMARY KEY (name, number)
    );
    """,
)
LATEST = len(MIGRATIONS)


def migrate(connection: psycopg.Connection, target: int = LATEST) -> int:
    """Bring the schema up to `target`; returns the version found before."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        connection.execute("CREATE TABLE IF NOT EXISTS aoe_runner_schema (version INTEGER NOT NULL)")
        found = version(connection)
        if found is None:
            connection.execute("INSERT INTO aoe_runner_schema (version) VALUES (0)")
        refuse_newer(found or 0)
        for step in range(found or 0, target):
            connection.execute(MIGRATIONS[step])
            connection.execute("UPDATE aoe_runner_schema SET version = %s", (step + 1,))
    return found or 0


def version_if_any(connection: psycopg.Connection) -> int | None:
    """The schema version, or None in a database aoe-runner never set up (outside a transaction)."""
    import psycopg

    try:
        return version(connection)
    except psycopg.errors.UndefinedTable:
        return None


def version(connection: psycopg.Connection) -> int | None:
    row = connection.execute("SELECT max(version) FROM aoe_runner_schema").fetchone()
    return row[0] if row else None


def refuse_newer(found: int) -> None:
    if found > LATEST:
        raise EnvironmentDrift(
            f"the run store's schema is version {found}, newer than this aoe-runner knows ({LATEST}): upgrade aoe-runner"
        )
