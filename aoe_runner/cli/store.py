"""`aoe-runner store`: a run history shared by many hosts, on PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aoe_runner.cli.terminal import terminal
from aoe_runner.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from aoe_runner.store.shared import SharedRunStore

Url = Annotated[str, typer.Argument(metavar="URL", help="postgresql://USER@HOST/DB (the password: PGPASSWORD or ~/.pgpass).")]
Artifacts = Annotated[
    Path | None,
    typer.Option("--artifacts", metavar="DIR", help="A directory every host mounts (NFSv4) for logs, results and banks."),
]


def store_init(url: Url, artifacts: Artifacts = None) -> int:
    """Create or migrate the store's schema, and make it this home's store (written without the password)."""
    from aoe_runner.common.words import count
    from aoe_runner.runs.history import RunStore
    from aoe_runner.store.choice import check_url, redact
    from aoe_runner.store.config import init_store

    url = check_url(url, "URL")
    if url == "local":
        raise UsageError("store init needs a postgresql:// URL")
    config, schema = init_store(url, artifacts.resolve() if artifacts else None)
    terminal.info(f"run store {redact(url)} ready (schema version {schema}); this home now uses it ({config})")
    if redact(url) != url:
        terminal.warning(f"the password was not written to {config.name}: give it with PGPASSWORD or in ~/.pgpass")
    recorded = len(RunStore(config.parent).run_directories())
    if recorded:
        pushing = "'aoe-runner runs push' sends local runs to the store"
        terminal.info(f"{count(recorded, 'run')} recorded on this host before: {pushing}")
    return ExitCode.OK


def shared_store(command: str) -> SharedRunStore:
    """The shared store this home uses; a usage error for a command that needs one when none is chosen."""
    from aoe_runner.store.config import open_store
    from aoe_runner.store.shared import SharedRunStore

    store = open_store(warn=terminal.warning)
    if not isinstance(store, SharedRunStore):
        raise UsageError(
            f"{command} needs a shared store: set AOE_RUNNER_STORE, pass --store URL, or run 'aoe-runner store init URL'"
        )
    return store
