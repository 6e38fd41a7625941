"""`aoe-runner runs`: the history of tuning runs (list, show, prune, rm, report, push)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from aoe_runner.cli import completion
from aoe_runner.cli.options import (
    CSV,
    HTML,
    JSON,
    MARKDOWN,
    TABLE,
    JsonFlag,
    KindFilter,
    OutputFile,
    ScriptFilter,
    SocFilter,
    WideFlag,
    emit,
    format_option,
    output_option,
    parse_kind,
    parse_status,
    whole_number,
)
from aoe_runner.cli.pages import formatter_for
from aoe_runner.cli.terminal import run_store, terminal
from aoe_runner.common.safe_text import visible
from aoe_runner.common.words import count
from aoe_runner.errors import ExitCode, InputError, UsageError

if TYPE_CHECKING:
    from aoe_runner.runs.history import RunRow, RunStore

LIST_FORMATS = (TABLE, JSON, CSV, MARKDOWN)
ListMode = Annotated[
    str | None, typer.Option("--mode", metavar="MODE", help="Only op or subgraph runs.", autocompletion=completion.MODES)
]
ListStatus = Annotated[
    str | None,
    typer.Option(
        "--status", metavar="STATUS", help="Only runs with this status (e.g. failed).", autocompletion=completion.STATUSES
    ),
]
Limit = Annotated[str, typer.Option("--limit", metavar="N", help="Show the newest N runs, at least 1.")]
Host = Annotated[str | None, typer.Option("--host", metavar="HOST", help="Only runs recorded on this host.")]
ShowAll = Annotated[bool, typer.Option("--all", help="Show every run (ignores --limit).")]
SORTS = ("started", "saved")
Sort = Annotated[
    str,
    typer.Option(
        "--sort",
        metavar="ORDER",
        help="started (newest first) or saved (most time saved first, of every matching run).",
        autocompletion=completion.choices(*SORTS),
    ),
]
ListFormat = Annotated[str | None, format_option(*LIST_FORMATS, notes=" (json: one object per run and line)")]
Run = Annotated[
    str,
    typer.Argument(
        metavar="RUN", help="A run id, a unique prefix of one, or 'latest' (the default).", autocompletion=completion.run_ids
    ),
]
ShowFormat = Annotated[str | None, format_option(TABLE, JSON, notes=" (json: the whole manifest)")]
Keep = Annotated[str | None, typer.Option("--keep", metavar="N", help="Keep the newest N of the matching runs.")]
OlderThan = Annotated[
    str | None, typer.Option("--older-than", metavar="DURATION", help="Only runs started longer ago (e.g. 30d, 12h).")
]
PruneStatus = Annotated[
    str | None, typer.Option("--status", metavar="STATUS", help="Only runs with this status.", autocompletion=completion.STATUSES)
]
Yes = Annotated[bool, typer.Option("--yes", help="Remove them; without it, only say what would go.")]
PruneDryRun = Annotated[bool, typer.Option("--dry-run", help="Only say what would go and what space comes back (the default).")]
RunIds = Annotated[
    list[str],
    typer.Argument(metavar="RUN", help="Run ids or unique prefixes.", show_default=False, autocompletion=completion.run_ids),
]
RmDryRun = Annotated[bool, typer.Option("--dry-run", help="Only say what would go and what space comes back.")]
PageFormat = Annotated[
    str, typer.Option("--format", "-f", metavar="FORMAT", help="html, the only one (a page of charts and a table).")
]
PageOutput = Annotated[str | None, output_option("Write the page")]


def runs_list(
    script: ScriptFilter = None,
    mode: ListMode = None,
    status: ListStatus = None,
    limit: Limit = "20",
    kind: KindFilter = None,
    host: Host = None,
    soc: SocFilter = None,
    show_all: ShowAll = False,
    sort: Sort = "started",
    output_format: ListFormat = None,
    as_json: JsonFlag = False,
    output: OutputFile = None,
    wide: WideFlag = False,
) -> int:
    """List recorded runs, newest first, with each tuning run's time saved and median speed-up."""
    from aoe_runner.common.modes import TuneMode
    from aoe_runner.runs.history import RunFilter
    from aoe_runner.runs.outcomes import list_runs

    formatter = formatter_for(output_format, as_json, LIST_FORMATS, output, wide)
    newest = whole_number(limit, "--limit", minimum=1)
    mode_name = TuneMode.parse(mode).value if mode else None
    where = RunFilter(
        script=script, mode=mode_name, status=parse_status(status), kind=parse_kind(kind), limit=None, host=host, soc=soc
    )
    store = run_store(reading=True)
    listing = list_runs(store, where, None if show_all else newest, by_saved=_sort(sort) == "saved")
    if not listing.rows and formatter.format_name == "table":
        given = _given(script=script, mode=mode, status=status, kind=kind, host=host, soc=soc)
        emit(terminal, _nothing_matches(store, given), output)
        return ExitCode.OK
    emit(terminal, formatter.run_list(listing), output)
    return ExitCode.OK


def _sort(text: str) -> str:
    chosen = text.strip().lower()
    if chosen not in SORTS:
        raise UsageError(f"--sort: {text!r} is not one of {', '.join(SORTS)}")
    return chosen


def _given(**filters: str | None) -> str:
    """The filters a user gave, as they typed them: `--script x.py --mode op`."""
    return visible(" ".join(f"--{name} {value}" for name, value in filters.items() if value is not None))


def _nothing_matches(store: RunStore, given: str) -> str:
    recorded = len(store.list())
    if not recorded or not given:
        return "no runs recorded\n"
    return f"no runs match {given} ({count(recorded, 'run')} recorded)\n"


def runs_show(run: Run = "latest", output_format: ShowFormat = None, as_json: JsonFlag = False, output: OutputFile = None) -> int:
    """Show one run's record: command, environment, outcome, markers, result files, bank changes."""

    formatter = formatter_for(output_format, as_json, (TABLE, JSON), output)
    store = run_store(reading=True)
    manifest = store.resolve(run)
    emit(terminal, formatter.run(manifest, store.run_dir(manifest.id)), output)
    return ExitCode.OK


def runs_prune(
    keep: Keep = None,
    older_than: OlderThan = None,
    status: PruneStatus = None,
    script: ScriptFilter = None,
    kind: KindFilter = None,
    yes: Yes = False,
    dry_run: PruneDryRun = False,
) -> int:
    """Remove old runs and the stored bank contents only they needed; a dry run unless --yes."""
    from aoe_runner.common.quantities import optional_duration
    from aoe_runner.runs.prune import PruneRule, select

    older_than_s = optional_duration(older_than, "--older-than")
    keeping = whole_number(keep, "--keep")
    rule = PruneRule(keep=keeping, older_than_s=older_than_s, status=parse_status(status), script=script, kind=parse_kind(kind))
    store = run_store(local_only="runs prune")
    return _remove(store, lambda: select(store, rule), really=yes and not dry_run, hint="pass --yes to remove them", kept=True)


def runs_rm(runs: RunIds, dry_run: RmDryRun = False) -> int:
    """Remove these runs and the stored bank contents only they needed; a live run is refused."""

    from aoe_runner.runs.units import whole_units

    store = run_store(local_only="runs rm")
    chosen = {store.resolve(reference).id for reference in runs}

    def choose() -> list[RunRow]:  # a verification's runs go together
        rows, notes = whole_units(store, chosen)
        for note in notes:
            terminal.info(note)
        return rows

    return _remove(store, choose, really=not dry_run, hint=None)


def _remove(store: RunStore, choose: Callable[[], list[RunRow]], really: bool, hint: str | None, kept: bool = False) -> int:
    from aoe_runner.render.runs import render_removal
    from aoe_runner.runs.prune import remove_or_plan

    waiting = f"waiting for another runs prune or runs rm to finish ({store.home})"
    removal = remove_or_plan(store, choose, really, lambda: terminal.info(waiting))
    if removal.finished:
        terminal.info(f"finished an interrupted removal of {count(len(removal.finished), 'run')}")
    terminal.result(render_removal(removal, done=really))
    for note in removal.notes:
        terminal.warning(note)
    if kept:
        from aoe_runner.runs.units import kept_summary

        terminal.info(kept_summary(store, removal.runs, done=really))
    if not really and removal.runs and hint:
        terminal.info(f"nothing was removed: {hint}")
    return ExitCode.OK


def runs_report(script: ScriptFilter = None, output_format: PageFormat = "html", output: PageOutput = None) -> int:
    """A page of the tuning runs over time: time saved, entries added and updated, bank size, status; needs -o FILE."""
    from aoe_runner.runs.savings import history_runs

    if output_format.strip().lower() != "html":
        raise UsageError(f"--format: {output_format!r} is not html ('runs list' gives table, json, csv and markdown)")
    formatter = formatter_for(HTML.value, False, (HTML,), output)
    store = run_store(reading=True)
    runs = history_runs(store, script)
    if not runs:
        which = f"of --script {script} " if script else ""
        recorded = count(len(store.list()), "run")
        raise InputError("runs report", f"no tuning run {which}to show ({recorded} recorded); no page written")
    emit(terminal, formatter.history(runs, script), output)
    broken = [error for run in runs for error in run.broken]
    for error in broken:
        terminal.error(error.message)
    return ExitCode.BAD_INPUT if broken else ExitCode.OK


def runs_push() -> int:
    """Upload the runs this host recorded locally (while the store was unreachable) to the shared store, by run id."""
    from aoe_runner.cli.store import shared_store
    from aoe_runner.store.push import push_local_runs

    store = shared_store("runs push")
    pushed = push_local_runs(store)
    for refusal in pushed.refused:
        terminal.warning(f"{refusal} (not pushed)")
    terminal.info(
        f"pushed {count(len(pushed.sent), 'run')} to {store.choice.shown}; {pushed.already} already there"
        + (f"; {len(pushed.unreadable)} unreadable (skipped)" if pushed.unreadable else "")
        + (f"; {len(pushed.refused)} refused by the server" if pushed.refused else "")
    )
    return ExitCode.BAD_INPUT if pushed.unreadable or pushed.refused else ExitCode.OK
