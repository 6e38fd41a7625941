"""The commands around tuning runs: `tune`, `runs list|show`, `bank restore`. Thin, like cli.py."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aoe_runner._click import AoeTyper
from aoe_runner.cli import app, terminal
from aoe_runner.cli_options import (
    CSV,
    JSON,
    MARKDOWN,
    TABLE,
    choose_format,
    emit,
    format_option,
    json_option,
    output_option,
    required_text,
    script_filter_option,
    whole_number,
    wide_option,
)
from aoe_runner.errors import ExitCode, InputError, UsageError
from aoe_runner.exiting import leave

if TYPE_CHECKING:
    from collections.abc import Callable

    from aoe_runner.render.tune_progress import TerminalReporter
    from aoe_runner.runs.manifest import RunManifest
    from aoe_runner.runs.status import RunStatus
    from aoe_runner.runs.store import RunRow, RunStore

runs_app = AoeTyper(name="runs", help="The history of tuning runs.")
bank_app = AoeTyper(name="bank", help="Knowledge banks recorded by tuning runs.")
app.add_typer(runs_app)
app.add_typer(bank_app)


@app.command(context_settings={"allow_interspersed_args": True})
def tune(
    script: Annotated[Path, typer.Argument(metavar="SCRIPT", help="The training script (.py, or any executable).")],
    arguments: Annotated[
        list[str] | None, typer.Argument(metavar="ARGS", help="Arguments for the script, after --.", show_default=False)
    ] = None,
    mode: Annotated[
        str | None, typer.Option("--mode", metavar="MODE", help="Required: op (also 2, opat) or subgraph (also 1, sgat).")
    ] = None,
    bank: Annotated[Path | None, typer.Option("--bank", metavar="PATH", help="The knowledge bank (sets TUNE_BANK_PATH).")] = None,
    work_dir: Annotated[
        Path | None,
        typer.Option("--work-dir", metavar="DIR", help="Sets ASCEND_WORK_PATH [default: a fresh directory in the run record]."),
    ] = None,
    te_parallel: Annotated[
        str | None, typer.Option("--te-parallel", metavar="N", help="Sets TE_PARALLEL_COMPILER, from 1 to 32.")
    ] = None,
    repeat_tune: Annotated[bool, typer.Option("--repeat-tune", help="Sets REPEAT_TUNE=True.")] = False,
    device: Annotated[str | None, typer.Option("--device", metavar="ID", help="Sets ASCEND_DEVICE_ID.")] = None,
    python: Annotated[
        str, typer.Option("--python", metavar="EXE", help="Interpreter for a .py script [default: this one].", show_default=False)
    ] = sys.executable,
    timeout: Annotated[
        str | None, typer.Option("--timeout", metavar="DURATION", help="Stop the script after this long (e.g. 90m, 2h).")
    ] = None,
    grace: Annotated[
        str, typer.Option("--grace", metavar="DURATION", help="Wait this long after SIGINT/SIGTERM before SIGKILL.")
    ] = "10s",
    model_memory: Annotated[
        str | None, typer.Option("--model-memory", metavar="SIZE", help="Memory the model needs, for preflight.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Run even when preflight fails.")] = False,
    rehash: Annotated[
        bool, typer.Option("--rehash", help="Read every bank file for the snapshot, not only those that look changed.")
    ] = False,
    skip: Annotated[
        list[str] | None,
        typer.Option("--skip", metavar="CHECK[,CHECK]", help="Run even when these preflight checks fail (repeatable)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what a run would do and whether preflight lets it start; run nothing.")
    ] = False,
) -> int:
    """Run a training script under AOE tuning: preflight, device lock, live progress, a full run record."""
    from aoe_runner.modes import TuneMode
    from aoe_runner.store.config import open_store
    from aoe_runner.tune.request import TuneRequest, parse_duration
    from aoe_runner.tune.session import dry_run as plan_dry_run
    from aoe_runner.tune.session import run_tune

    if mode is None:
        raise UsageError("tune needs --mode op or --mode subgraph")
    request = TuneRequest(
        script=script,
        arguments=arguments or [],
        mode=TuneMode.parse(mode),
        bank=bank,
        work_dir=work_dir,
        te_parallel=_te_parallel(te_parallel),
        repeat_tune=repeat_tune,
        device=whole_number(device, "--device"),
        python=python,
        timeout_s=parse_duration(timeout, "--timeout") if timeout is not None else None,
        grace_s=parse_duration(grace, "--grace"),
        model_memory=model_memory,
        force=force,
        rehash=rehash,
        skip=tuple(name.strip() for names in skip or [] for name in names.split(",") if name.strip()),
    )
    store = open_store(warn=terminal.warning)
    if dry_run:
        plan = plan_dry_run(request, store)
        terminal.result(plan.describe())
        return ExitCode.OK if plan.would_start else ExitCode.FINDING
    from aoe_runner.render.tune_progress import TerminalReporter
    from aoe_runner.tune.relay import TerminalOutput
    from aoe_runner.tune.signals import CountedSignals

    reporter = TerminalReporter(terminal, live=terminal.err_is_terminal())
    # no reader, however slow, can block the run; until the run starts, SIGTERM and SIGHUP cancel like Ctrl-C, and
    # from then on every signal is counted until the command ends (the run is recorded, whatever arrives)
    with CountedSignals(cancelling=True) as signals:
        with TerminalOutput() as output:
            try:
                manifest = run_tune(request, reporter, store, output, signals=signals)
            except KeyboardInterrupt as cancel:  # said here, through the writer: a full stderr cannot hold up the exit
                name = cancel.args[0] if cancel.args else "SIGINT"
                terminal.error(f"interrupted ({name}) before the script started; nothing was recorded")
                return ExitCode.INTERRUPTED
            _say_how_it_went(reporter, manifest)
        code = manifest.exit_code if manifest.exit_code is not None else ExitCode.INTERNAL
        leave(code)  # as the program, it ends here: a signal from now on cannot change how the recorded run ends
    return code


def _say_how_it_went(reporter: TerminalReporter, manifest: RunManifest) -> None:
    reporter.finish()
    why = f" ({manifest.stopped_by})" if manifest.stopped_by else ""
    terminal.info(
        f"aoe-runner: run {manifest.id} {manifest.status.value}{why}, exit {manifest.exit_code}; "
        f"{_count(len(manifest.result_files), 'result file')}; see 'aoe-runner runs show {manifest.id}'"
    )
    if manifest.late_signal:
        terminal.info(f"aoe-runner: {manifest.late_signal} arrived after the script ended; the run was recorded first")


@runs_app.command("list")
def runs_list(
    script: Annotated[str | None, script_filter_option()] = None,
    mode: Annotated[str | None, typer.Option("--mode", metavar="MODE", help="Only op or subgraph runs.")] = None,
    status: Annotated[
        str | None, typer.Option("--status", metavar="STATUS", help="Only runs with this status (e.g. failed).")
    ] = None,
    limit: Annotated[str, typer.Option("--limit", metavar="N", help="Show the newest N runs, at least 1.")] = "20",
    kind: Annotated[str | None, typer.Option("--kind", metavar="KIND", help="Only tune or only verify runs.")] = None,
    host: Annotated[str | None, typer.Option("--host", metavar="HOST", help="Only runs recorded on this host.")] = None,
    soc: Annotated[str | None, typer.Option("--soc", metavar="SOC", help="Only runs on this SoC (e.g. Ascend910B3).")] = None,
    show_all: Annotated[bool, typer.Option("--all", help="Show every run (ignores --limit).")] = False,
    output_format: Annotated[
        str | None, format_option(TABLE, JSON, CSV, MARKDOWN, notes=" (json: one object per run and line)")
    ] = None,
    as_json: Annotated[bool, json_option()] = False,
    output: Annotated[str | None, output_option()] = None,
    wide: Annotated[bool, wide_option()] = False,
) -> int:
    """List recorded runs, newest first; a run whose supervisor died shows as abandoned."""
    from aoe_runner.modes import TuneMode
    from aoe_runner.render.runs import render_run_list_as
    from aoe_runner.runs.store import RunFilter
    from aoe_runner.store.config import open_store

    chosen = choose_format(output_format, as_json, (TABLE, JSON, CSV, MARKDOWN))
    newest = whole_number(limit, "--limit", minimum=1)
    where = RunFilter(
        script=script,
        mode=TuneMode.parse(mode).value if mode else None,
        status=_status(status),
        kind=_kind(kind),
        limit=None if show_all else newest,
        host=host,
        soc=soc,
    )
    rows = open_store(warn=terminal.warning).list(where)
    emit(terminal, render_run_list_as(rows, chosen, terminal.width(wide)), output)
    return ExitCode.OK


@runs_app.command("show")
def runs_show(
    run: Annotated[str, typer.Argument(metavar="RUN", help="A run id, a unique prefix of one, or 'latest'.")],
    output_format: Annotated[str | None, format_option(TABLE, JSON, notes=" (json: the whole manifest)")] = None,
    as_json: Annotated[bool, json_option()] = False,
    output: Annotated[str | None, output_option()] = None,
) -> int:
    """Show one run's record: command, environment, outcome, markers, result files, bank changes."""
    from aoe_runner.store.config import open_store

    chosen = choose_format(output_format, as_json, (TABLE, JSON))
    store = open_store(warn=terminal.warning)
    manifest = store.resolve(required_text(run, "RUN"))
    if chosen is JSON:
        from aoe_runner.jsontext import dump_json

        text = dump_json(manifest)
    else:
        from aoe_runner.render.runs import render_run

        text = render_run(manifest, store.run_dir(manifest.id))
    emit(terminal, text, output)
    return ExitCode.OK


@runs_app.command("prune")
def runs_prune(
    keep: Annotated[str | None, typer.Option("--keep", metavar="N", help="Keep the newest N of the matching runs.")] = None,
    older_than: Annotated[
        str | None, typer.Option("--older-than", metavar="DURATION", help="Only runs started longer ago (e.g. 30d, 12h).")
    ] = None,
    status: Annotated[str | None, typer.Option("--status", metavar="STATUS", help="Only runs with this status.")] = None,
    script: Annotated[str | None, script_filter_option()] = None,
    kind: Annotated[str | None, typer.Option("--kind", metavar="KIND", help="Only tune or only verify runs.")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Remove them; without it, only say what would go.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only say what would go and what space comes back (the default).")
    ] = False,
) -> int:
    """Remove old runs and the stored bank contents only they needed; a dry run unless --yes."""
    from aoe_runner.runs.prune import PruneRule, select
    from aoe_runner.store.config import open_store
    from aoe_runner.tune.request import parse_duration

    rule = PruneRule(
        keep=whole_number(keep, "--keep"),
        older_than_s=parse_duration(older_than, "--older-than") if older_than is not None else None,
        status=_status(status),
        script=script,
        kind=_kind(kind),
    )
    store = open_store(warn=terminal.warning, local_only="runs prune")
    return _remove(store, lambda: select(store, rule), really=yes and not dry_run, hint="pass --yes to remove them")


@runs_app.command("rm")
def runs_rm(
    runs: Annotated[list[str], typer.Argument(metavar="RUN", help="Run ids or unique prefixes.", show_default=False)],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only say what would go and what space comes back.")] = False,
) -> int:
    """Remove these runs and the stored bank contents only they needed; a live run is refused."""
    from aoe_runner.store.config import open_store

    store = open_store(warn=terminal.warning, local_only="runs rm")
    chosen = {manifest.id: manifest for manifest in (store.resolve(required_text(reference, "RUN")) for reference in runs)}
    return _remove(store, lambda: [row for row in store.list() if row.id in chosen], really=not dry_run, hint=None)


def _remove(store: RunStore, choose: Callable[[], list[RunRow]], really: bool, hint: str | None) -> int:
    import sqlite3

    from aoe_runner.render.runs import render_removal
    from aoe_runner.runs.prune import plan_removal, remove_runs
    from aoe_runner.runs.store import reason_of

    try:
        waiting = f"waiting for another runs prune or runs rm to finish ({store.home})"
        removal = remove_runs(store, choose, lambda: terminal.info(waiting)) if really else plan_removal(store, choose())
        if removal.finished:
            terminal.info(f"finished an interrupted removal of {_count(len(removal.finished), 'run')}")
    except (OSError, sqlite3.Error) as error:  # a full disk, a read-only home, an index another process holds
        raise InputError(
            str(store.home),
            f"cannot remove runs there: {reason_of(error)}; the next runs prune or runs rm finishes what was begun",
        ) from None
    terminal.result(render_removal(removal, done=really))
    for note in removal.notes:
        terminal.warning(note)
    if not really and removal.runs and hint:
        terminal.info(f"nothing was removed: {hint}")
    return ExitCode.OK


@bank_app.command("restore")
def bank_restore(
    run: Annotated[str, typer.Argument(metavar="RUN", help="The run whose 'before' snapshot to restore.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would change; change nothing.")] = False,
) -> int:
    """Roll a bank back to its state before RUN; files it replaces or removes are backed up first."""
    from contextlib import nullcontext

    from aoe_runner.devlock import BankLock, LockHolder
    from aoe_runner.runs.bank import apply_restore, plan_restore, refuse_if_in_use
    from aoe_runner.runs.store import TUNING
    from aoe_runner.store.config import open_store

    store = open_store(warn=terminal.warning)
    manifest = store.resolve(required_text(run, "RUN"), kind=TUNING)
    bank = Path(manifest.bank_before.directory)
    if not dry_run:
        refuse_if_in_use(bank, store.live_runs())
    holder = LockHolder.here(f"aoe-runner bank restore {manifest.id}")
    with nullcontext() if dry_run else BankLock(bank).acquire(holder):  # no tune starts on this bank meanwhile
        plan = plan_restore(*store.restore_source(manifest))
        if plan.empty:
            terminal.info(f"{bank} already matches its state before run {manifest.id}; nothing to do")
            return ExitCode.OK
        terminal.result("".join(line + "\n" for line in plan.lines()))
        if dry_run:
            return ExitCode.OK
        backup = _new_path(store.home / "bank-backups" / f"{datetime.now():%Y%m%d-%H%M%S}-before-restoring-{manifest.id}")
        apply_restore(plan, backup)
    terminal.info(f"restored {bank} to its state before run {manifest.id}; the replaced files are in {backup}")
    return ExitCode.OK


def _new_path(wanted: Path) -> Path:
    """`wanted`, or with -2, -3... when it is taken: a restore run again in the same second (after an interrupted
    one, say) backs up into a directory of its own (the bank's lock keeps two restores of it from racing)."""
    candidate, number = wanted, 1
    while os.path.lexists(candidate):
        number += 1
        candidate = wanted.with_name(f"{wanted.name}-{number}")
    return candidate


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _te_parallel(text: str | None) -> int | None:
    """--te-parallel as a whole number; the tuning request checks its range."""
    if text is None:
        return None
    try:
        return int(text.strip(), 10)
    except ValueError:
        raise UsageError(f"--te-parallel: {text!r} is not a whole number from 1 to 32") from None


def _kind(text: str | None) -> str | None:
    if text is None:
        return None
    if text.strip().lower() not in ("tune", "verify"):
        raise UsageError(f"--kind: {text!r} is not one of tune, verify")
    return text.strip().lower()


def _status(text: str | None) -> RunStatus | None:
    from aoe_runner.runs.status import RunStatus

    if text is None:
        return None
    try:
        return RunStatus(text.strip().lower().replace("-", "_"))
    except ValueError:
        names = ", ".join(status.value for status in RunStatus)
        raise UsageError(f"--status: {text!r} is not one of {names}") from None


@app.command(context_settings={"allow_interspersed_args": True})
def verify(
    script: Annotated[
        Path | None, typer.Argument(metavar="SCRIPT", help="The training script (not with --run).", show_default=False)
    ] = None,
    arguments: Annotated[
        list[str] | None, typer.Argument(metavar="ARGS", help="Arguments for the script, after --.", show_default=False)
    ] = None,
    bank: Annotated[
        Path | None,
        typer.Option("--bank", metavar="PATH", help="The tuned bank (TUNE_BANK_PATH) [default with --run: the run's]."),
    ] = None,
    run: Annotated[
        str | None, typer.Option("--run", metavar="RUN", help="Take the script, its arguments and the bank from a tuning run.")
    ] = None,
    repeats: Annotated[int, typer.Option("--repeats", min=1, metavar="N", help="Runs per arm, interleaved A B A B.")] = 3,
    warmup: Annotated[
        int | None,
        typer.Option("--warmup", min=0, metavar="K", help="Leading steps to drop per run [default: up to 5, at most a quarter]."),
    ] = None,
    step_pattern: Annotated[
        str | None, typer.Option("--step-pattern", metavar="REGEX", help="A regex with one capture group: the step time.")
    ] = None,
    unit: Annotated[str | None, typer.Option("--unit", metavar="UNIT", help="ms, s or steps/s for --step-pattern.")] = None,
    threshold: Annotated[str, typer.Option("--threshold", metavar="PCT", help="Exit 1 when slower by more than this.")] = "2%",
    min_speedup: Annotated[
        str | None,
        typer.Option("--min-speedup", metavar="PCT", help="Gate: the median speed-up's interval must start at PCT or above."),
    ] = None,
    min_mean_speedup: Annotated[
        str | None,
        typer.Option("--min-mean-speedup", metavar="PCT", help="Gate: the same for the mean step time's speed-up."),
    ] = None,
    max_tail_regression: Annotated[
        str | None,
        typer.Option(
            "--max-tail-regression", metavar="PCT", help="Gate: P95 and P99 may be at most PCT slower, at the interval's end."
        ),
    ] = None,
    output_format: Annotated[
        str, typer.Option("--format", "-f", metavar="FORMAT", help="table, markdown, csv (per run), json or html (with -o FILE).")
    ] = "table",
    output: Annotated[
        str | None, typer.Option("--output", "-o", metavar="FILE", help="Write the report here (- is stdout).")
    ] = None,
    python: Annotated[
        str, typer.Option("--python", metavar="EXE", help="Interpreter for a .py script [default: this one].", show_default=False)
    ] = sys.executable,
    device: Annotated[int | None, typer.Option("--device", metavar="ID", help="Sets ASCEND_DEVICE_ID.")] = None,
    timeout: Annotated[str | None, typer.Option("--timeout", metavar="DURATION", help="Limit for each run.")] = None,
    grace: Annotated[str, typer.Option("--grace", metavar="DURATION", help="SIGTERM-to-SIGKILL wait.")] = "10s",
) -> int:
    """Prove that the tuned bank makes training faster: baseline and tuned runs, interleaved, with a verdict and gates."""
    from aoe_runner.cli import _emit, parse_percent
    from aoe_runner.render.tune_progress import TerminalReporter
    from aoe_runner.store.config import open_store
    from aoe_runner.tune.request import parse_duration
    from aoe_runner.verify.gates import Gates
    from aoe_runner.verify.session import VerifyRequest, run_verify
    from aoe_runner.verify.stats import Verdict

    if output_format not in ("table", "markdown", "csv", "json", "html"):
        raise UsageError(f"--format: {output_format!r} is not one of table, markdown, csv, json, html")
    if output_format == "html":
        from aoe_runner.cli_html import page_context

        context = page_context(output)  # before any run: a usage error must not cost a verification

    def optional_percent(text: str | None, option: str) -> float | None:
        return parse_percent(text, option) if text is not None else None

    request = VerifyRequest(
        script=script,
        arguments=arguments or [],
        bank=bank,
        run=run,
        repeats=repeats,
        warmup=warmup,
        step_pattern=step_pattern,
        unit=unit,
        threshold_pct=parse_percent(threshold, "--threshold"),
        gates=Gates(
            min_speedup_pct=optional_percent(min_speedup, "--min-speedup"),
            min_mean_speedup_pct=optional_percent(min_mean_speedup, "--min-mean-speedup"),
            max_tail_regression_pct=optional_percent(max_tail_regression, "--max-tail-regression"),
        ),
        python=python,
        device=device,
        timeout_s=parse_duration(timeout, "--timeout") if timeout is not None else None,
        grace_s=parse_duration(grace, "--grace"),
    )
    report = run_verify(request, TerminalReporter(terminal, live=False), open_store(warn=terminal.warning))
    text: str | bytes
    if output_format == "json":
        from aoe_runner.jsontext import dump_json

        text = dump_json(report)
    elif output_format == "html":
        from aoe_runner.html.page import render
        from aoe_runner.html.verify_page import verify_page

        text = render(verify_page(report, report.step_times_ms), context)
    else:
        from aoe_runner.render.verify_report import render_verify, render_verify_csv

        text = (
            render_verify_csv(report) if output_format == "csv" else render_verify(report, markdown=output_format == "markdown")
        )
    _emit(text, output)
    for failed in (gate for gate in report.gates if not gate.passed):
        terminal.error(f"gate {failed.gate} failed: {failed.explanation}")
    slower = report.comparison.verdict is Verdict.SLOWER
    return ExitCode.FINDING if slower or not report.gates_passed else ExitCode.OK
