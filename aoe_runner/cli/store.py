"""`aoe-runner store`: a run history shared by many hosts, on PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aoe_runner.cli.options import JSON, TABLE, JsonFlag, emit, format_option
from aoe_runner.cli.pages import formatter_for
from aoe_runner.cli.terminal import run_store, terminal
from aoe_runner.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from aoe_runner.store.shared import SharedRunStore

Url = Annotated[str, typer.Argument(metavar="URL", help="postgresql://USER@HOST/DB (the password: PGPASSWORD or ~/.pgpass).")]
Target = Annotated[
    str, typer.Argument(metavar="STORE", help="local (this host's history) or postgresql://USER@HOST/DB.", show_default=False)
]
StatusFormat = Annotated[str | None, format_option(TABLE, JSON)]
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
        raise UsageError("store init needs a postgresql:// URL ('aoe-runner store use local' goes back to the local history)")
    config, schema = init_store(url, artifacts.resolve() if artifacts else None)
    terminal.info(f"run store {redact(url)} ready (schema version {schema}); this home now uses it ({config})")
    if redact(url) != url:
        terminal.warning(f"the password was not written to {config.name}: give it with PGPASSWORD or in ~/.pgpass")
    recorded = len(RunStore(config.parent).run_directories())
    if recorded:
        pushing = "'aoe-runner runs push' sends local runs to the store"
        terminal.info(f"{count(recorded, 'run')} recorded on this host before: {pushing}")
    return ExitCode.OK


def store_status(output_format: StatusFormat = None, as_json: JsonFlag = False) -> int:
    """Which run store this home uses, whether it can be reached, how many runs it holds, what this host has not pushed."""
    from aoe_runner.common.home import runner_home
    from aoe_runner.store.config import current_choice
    from aoe_runner.store.status import store_status as status_of

    formatter = formatter_for(output_format, as_json, (TABLE, JSON), None)
    status = status_of(runner_home(), current_choice())
    emit(terminal, formatter.store_status(status), None)
    return ExitCode.BAD_INPUT if status.reachable is False else ExitCode.OK


def store_use(target: Target) -> int:
    """Make this home use another run store: 'local' (this host's history) or a postgresql:// URL (reached first)."""
    from aoe_runner.store.choice import check_url, redact
    from aoe_runner.store.config import STORE_VARIABLE, current_choice, use_store

    if not target.strip():
        raise UsageError("STORE: give 'local' or a postgresql:// URL")
    url = check_url(target, "STORE")
    config = use_store(url)
    terminal.info(f"this home now uses the run store {redact(url)} ({config})")
    chosen = current_choice()
    if chosen.source in ("--store", STORE_VARIABLE):
        terminal.warning(f"{chosen.source} chooses {chosen.shown} ahead of {config.name} while it is set")
    return ExitCode.OK


def shared_store(command: str) -> SharedRunStore:
    """The shared store this home uses; a usage error for a command that needs one when none is chosen."""
    from aoe_runner.store.shared import SharedRunStore

    store = run_store()
    if not isinstance(store, SharedRunStore):
        raise UsageError(
            f"{command} needs a shared store: set AOE_RUNNER_STORE, pass --store URL, or run 'aoe-runner store init URL'"
        )
    return store
