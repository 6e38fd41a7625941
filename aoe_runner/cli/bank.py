"""`aoe-runner bank`: knowledge banks recorded by tuning runs (restore, best)."""

from __future__ import annotations

from typing import Annotated

import typer

from aoe_runner.cli import completion
from aoe_runner.cli.options import (
    CSV,
    JSON,
    TABLE,
    JsonFlag,
    OutputFile,
    ScriptFilter,
    SocFilter,
    emit,
    format_option,
)
from aoe_runner.cli.pages import formatter_for
from aoe_runner.cli.terminal import run_store, terminal
from aoe_runner.common.words import count
from aoe_runner.errors import ExitCode

BEST_FORMATS = (TABLE, JSON, CSV)
Run = Annotated[
    str, typer.Argument(metavar="RUN", help="The run whose 'before' snapshot to restore.", autocompletion=completion.run_ids)
]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Print what would change; change nothing.")]
BestFormat = Annotated[str | None, format_option(*BEST_FORMATS, notes=" (json: one object per operator and line)")]


def bank_restore(run: Run, dry_run: DryRun = False) -> int:
    """Roll a bank back to its state before RUN; files it replaces or removes are backed up first."""
    from aoe_runner.runs.restore import RestorePlan, restore_before

    def show(plan: RestorePlan) -> None:
        terminal.result("".join(line + "\n" for line in plan.lines()))

    restored = restore_before(run_store(reading=True), run, dry_run, planned=show)
    if restored.plan.empty:
        terminal.info(f"{restored.bank} already matches its state before run {restored.run}; nothing to do")
    elif dry_run:
        changes = count(len(restored.plan.lines()), "change")
        terminal.info(f"would restore {restored.bank} to its state before run {restored.run} ({changes}); nothing changed")
    elif restored.backup is not None:
        terminal.info(
            f"restored {restored.bank} to its state before run {restored.run}; the replaced files are in {restored.backup}"
        )
    return ExitCode.OK


def bank_best(
    soc: SocFilter = None,
    script: ScriptFilter = None,
    output_format: BestFormat = None,
    as_json: JsonFlag = False,
    output: OutputFile = None,
) -> int:
    """Per operator, the recorded run whose tuned result was fastest, with its host: a report, not a bank write."""
    from aoe_runner.runs.best import local_best
    from aoe_runner.store.best import shared_best
    from aoe_runner.store.shared import SharedRunStore

    formatter = formatter_for(output_format, as_json, BEST_FORMATS, output)
    store = run_store(reading=True)
    found = shared_best(store, soc, script) if isinstance(store, SharedRunStore) else local_best(store, soc, script)
    emit(terminal, formatter.best(found), output)
    return ExitCode.OK
