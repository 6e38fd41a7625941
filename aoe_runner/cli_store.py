"""The commands of a shared run store: `store init`, `runs push`, `bank best`. Thin, like cli.py."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aoe_runner._click import AoeTyper
from aoe_runner.cli import app, terminal
from aoe_runner.cli_options import (
    CSV,
    JSON,
    TABLE,
    choose_format,
    emit,
    format_option,
    json_option,
    output_option,
    script_filter_option,
)
from aoe_runner.cli_runs import bank_app, runs_app
from aoe_runner.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from aoe_runner.store.shared import SharedRunStore

store_app = AoeTyper(name="store", help="A run history shared by many hosts, on PostgreSQL.")
app.add_typer(store_app)


@store_app.command("init")
def store_init(
    url: Annotated[str, typer.Argument(metavar="URL", help="postgresql://USER@HOST/DB (the password: PGPASSWORD or ~/.pgpass).")],
    artifacts: Annotated[
        Path | None,
        typer.Option("--artifacts", metavar="DIR", help="A directory every host mounts (NFSv4) for logs, results and banks."),
    ] = None,
) -> int:
    """Create or migrate the store's schema, and make it this home's store (written without the password)."""
    from aoe_runner.home import runner_home
    from aoe_runner.store.config import check_url, redact, write_config
    from aoe_runner.store.pg_index import PgIndex
    from aoe_runner.store.pg_schema import LATEST

    url = check_url(url, "URL")
    if url == "local":
        raise UsageError("store init needs a postgresql:// URL")
    index = PgIndex(url, redact(url))
    index.check_writable()  # connects, then creates or migrates the schema
    index.close()
    config = write_config(runner_home(), url, artifacts.resolve() if artifacts else None)
    terminal.info(f"run store {redact(url)} ready (schema version {LATEST}); this home now uses it ({config})")
    if redact(url) != url:
        terminal.warning(f"the password was not written to {config.name}: give it with PGPASSWORD or in ~/.pgpass")
    return ExitCode.OK


@runs_app.command("push")
def runs_push() -> int:
    """Upload the runs this host recorded locally (while the store was unreachable) to the shared store, by run id."""
    from aoe_runner.store.push import push_local_runs

    store = _shared_store("runs push")
    pushed = push_local_runs(store)
    for refusal in pushed.refused:
        terminal.warning(f"{refusal} (not pushed)")
    terminal.info(
        f"pushed {_count(len(pushed.sent), 'run')} to {store.choice.shown}; {pushed.already} already there"
        + (f"; {len(pushed.unreadable)} unreadable (skipped)" if pushed.unreadable else "")
        + (f"; {len(pushed.refused)} refused by the server" if pushed.refused else "")
    )
    return ExitCode.BAD_INPUT if pushed.unreadable or pushed.refused else ExitCode.OK


@bank_app.command("best")
def bank_best(
    soc: Annotated[str | None, typer.Option("--soc", metavar="SOC", help="Only runs on this SoC (e.g. Ascend910B3).")] = None,
    script: Annotated[str | None, script_filter_option()] = None,
    output_format: Annotated[
        str | None, format_option(TABLE, JSON, CSV, notes=" (json: one object per operator and line)")
    ] = None,
    as_json: Annotated[bool, json_option()] = False,
    output: Annotated[str | None, output_option()] = None,
) -> int:
    """Per operator, the recorded run whose tuned result was fastest, with its host: a report, not a bank write."""
    from aoe_runner.render.best import render_best_as
    from aoe_runner.store.best import best_results

    chosen = choose_format(output_format, as_json, (TABLE, JSON, CSV))
    store = _shared_store("bank best")
    emit(terminal, render_best_as(best_results(store, soc, script), chosen), output)
    return ExitCode.OK


def _shared_store(command: str) -> SharedRunStore:
    from aoe_runner.store.config import open_store
    from aoe_runner.store.shared import SharedRunStore

    store = open_store(warn=terminal.warning)
    if not isinstance(store, SharedRunStore):
        raise UsageError(
            f"{command} needs a shared store: set AOE_RUNNER_STORE, pass --store URL, or run 'aoe-runner store init URL'"
        )
    return store


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
