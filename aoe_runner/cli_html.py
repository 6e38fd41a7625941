"""`--format html` on the command line: where a page goes, the command that made it, and `runs report`. Thin."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from aoe_runner.cli import INVOKED, terminal
from aoe_runner.cli_options import emit, output_option, script_filter_option
from aoe_runner.cli_runs import runs_app
from aoe_runner.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from aoe_runner.html.formatter import HtmlFormatter
    from aoe_runner.html.page import PageContext


def page_context(output: str | None) -> PageContext:
    """A page is written to -o FILE (or `-o -`, stdout, asked for by name): never megabytes onto a terminal by default.
    plotly.min.js is read here too, so a broken install is refused before the work (verify's runs), not after."""
    from aoe_runner.html.assets import plotly_js
    from aoe_runner.html.page import PageContext

    if output is None:
        raise UsageError(
            "--format html writes a whole page (about 5 MB with its charting library): give -o FILE, or -o - for stdout"
        )
    plotly_js()
    return PageContext.of(INVOKED)


def html_formatter(output: str | None) -> HtmlFormatter:
    from aoe_runner.html.formatter import HtmlFormatter

    return HtmlFormatter(page_context(output))


@runs_app.command("report")
def runs_report(
    script: Annotated[str | None, script_filter_option()] = None,
    output_format: Annotated[
        str, typer.Option("--format", "-f", metavar="FORMAT", help="html, the only one (a page of charts and a table).")
    ] = "html",
    output: Annotated[str | None, output_option("Write the page")] = None,
) -> int:
    """A page of the tuning runs over time: time saved, entries added and updated, bank size, status; needs -o FILE."""
    from aoe_runner.html.history_page import history_page, history_runs
    from aoe_runner.html.page import render
    from aoe_runner.store.config import open_store

    if output_format.strip().lower() != "html":
        raise UsageError(f"--format: {output_format!r} is not html ('runs list' gives table, json, csv and markdown)")
    context = page_context(output)
    store = open_store(warn=terminal.warning)
    runs = history_runs(store, script)
    emit(terminal, render(history_page(runs, script), context), output)
    broken = [error for run in runs for error in run.broken]
    for error in broken:
        terminal.error(error.message)
    return ExitCode.BAD_INPUT if broken else ExitCode.OK
