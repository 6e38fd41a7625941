"""`aoe-runner report`: a bank summary of result files or recorded runs, or with --diff a comparison of two."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
    WideFlag,
    emit,
    format_option,
    output_option,
    whole_number,
)
from aoe_runner.cli.pages import formatter_for
from aoe_runner.cli.terminal import run_store, terminal
from aoe_runner.common import collector
from aoe_runner.common.exiting import leave
from aoe_runner.common.words import count
from aoe_runner.errors import ExitCode, InputError, UsageError
from aoe_runner.report.rules import DEFAULT_THRESHOLD_PCT

if TYPE_CHECKING:
    from aoe_runner.render.formats import Formatter
    from aoe_runner.report.api import Loaded

FORMATS = (TABLE, JSON, CSV, MARKDOWN, HTML)
Paths = Annotated[
    list[str] | None,
    typer.Argument(help="Result files, directories (searched recursively) or glob patterns.", metavar="PATH"),
]
Diff = Annotated[bool, typer.Option("--diff", help="Compare two sets of results: the two PATHs are OLD and NEW.")]
Format = Annotated[str | None, format_option(*FORMATS, notes=" (html: with -o FILE)")]
Output = Annotated[str | None, output_option("Write the result (only when there is one)")]
Top = Annotated[
    str | None,
    typer.Option(
        "--top", metavar="N", help="Rows per list, at least 1 [default: 20 for table and markdown, 2000 for html, else all]."
    ),
]
MinGain = Annotated[str, typer.Option("--min-gain", metavar="PCT", help="Speed-up below this is 'no real gain'.")]
Threshold = Annotated[
    str | None, typer.Option("--threshold", metavar="PCT", help="With --diff: the smallest change that counts [default: 2%].")
]
FailOnRegression = Annotated[
    bool, typer.Option("--fail-on-regression", help="With --diff: exit 1 when an entry regressed beyond --threshold.")
]
Runs = Annotated[
    list[str] | None,
    typer.Option(
        "--run", metavar="RUN", help="Add the result files of a recorded run (repeatable).", autocompletion=completion.run_ids
    ),
]
AllowEnvDrift = Annotated[
    bool, typer.Option("--allow-env-drift", help="With --diff: compare runs recorded with different CANN/SoC/driver.")
]
Script = Annotated[
    str | None,
    typer.Option(
        "--script", metavar="SCRIPT", help="With --diff and no paths: the last two succeeded tuning runs of this script."
    ),
]
Samples = Annotated[bool, typer.Option("--samples", help="Add the sample result files shipped with aoe-runner.")]
Campaign = Annotated[
    str | None, typer.Option("--campaign", metavar="ID", help="Add the result files of every run of a campaign (or latest).")
]
AllowEmpty = Annotated[
    bool, typer.Option("--allow-empty", help="A named file that holds no report is no error (default: exit 4).")
]


@collector.paused_throughout  # many objects, no cycles: see common/collector.py
def report(
    paths: Paths = None,
    diff: Diff = False,
    output_format: Format = None,
    as_json: JsonFlag = False,
    output: Output = None,
    wide: WideFlag = False,
    top: Top = None,
    min_gain: MinGain = "1%",
    threshold: Threshold = None,
    fail_on_regression: FailOnRegression = False,
    runs: Runs = None,
    allow_env_drift: AllowEnvDrift = False,
    script: Script = None,
    samples: Samples = False,
    allow_empty: AllowEmpty = False,
    campaign: Campaign = None,
) -> int:
    """Summarise result files or recorded runs into the bank they imply; --diff compares two (default: the newest runs)."""
    from aoe_runner.common.quantities import parse_percent
    from aoe_runner.report.samples import samples_directory

    formatter = formatter_for(output_format, as_json, FORMATS, output, wide)
    rows = whole_number(top, "--top", minimum=1)
    min_gain_pct = parse_percent(min_gain, "--min-gain")
    threshold_pct = DEFAULT_THRESHOLD_PCT if threshold is None else parse_percent(threshold, "--threshold")
    paths = (paths or []) + ([str(samples_directory())] if samples else [])
    runs = [*(runs or []), *_campaign_runs(campaign)]
    if diff:
        if script is not None and (paths or runs):
            raise UsageError("--script picks the two runs to compare; it cannot be given with paths or --run")
        gates = _DiffGates(threshold_pct, fail_on_regression, allow_env_drift, allow_empty)
        return _diff(formatter, paths + runs, rows, output, gates, script)
    if fail_on_regression or threshold is not None or allow_env_drift or script is not None:
        raise UsageError("--threshold, --fail-on-regression, --allow-env-drift and --script need --diff")
    if not paths and not runs:
        raise UsageError("report needs a PATH (a result file, a directory or a glob pattern), --run RUN or --samples")
    return _summary(formatter, paths, runs, rows, output, min_gain_pct, allow_empty)


def _campaign_runs(reference: str | None) -> list[str]:
    """The runs of a campaign's jobs that recorded result files (each job's last attempt)."""
    if reference is None:
        return []
    from aoe_runner.campaign.record import campaign_store
    from aoe_runner.common.home import runner_home

    record = campaign_store(runner_home(), terminal.warning).resolve(reference)
    store = run_store(reading=True)
    found = [job.run for job in record.jobs if job.run and (manifest := store.load_or_warn(job.run)) and manifest.result_files]
    if not found:
        raise InputError(record.id, "no run of this campaign recorded a result file")
    return found


def _summary(
    formatter: Formatter, paths: list[str], runs: list[str], rows: int | None, output: str | None, gain: float, empty: bool
) -> int:
    from aoe_runner.report import api

    loaded = api.summarize_paths(paths + (_run_paths(runs) if runs else []), gain, allow_empty=empty)
    _print_problems([loaded])
    if not loaded.files_loaded:
        return ExitCode.BAD_INPUT
    if terminal.verbose:
        files = loaded.files
        reports = count(sum(row.reports for row in files), "report")
        terminal.detail(f"read {count(len(files), 'result file')} ({reports}); {len(loaded.errors)} not read")
    emit(terminal, formatter.summary(loaded, rows), output)
    code = ExitCode.BAD_INPUT if loaded.errors else ExitCode.OK
    leave(code)  # as the program: without freeing the summary one object at a time (common/exiting.py)
    return code


@dataclass(frozen=True)
class _DiffGates:
    threshold_pct: float
    fail_on_regression: bool
    allow_env_drift: bool
    allow_empty: bool


def _diff(
    formatter: Formatter, sides: list[str], rows: int | None, output: str | None, gates: _DiffGates, script: str | None
) -> int:
    from aoe_runner.report import api
    from aoe_runner.runs.sources import diff_sides

    chosen = diff_sides(run_store(reading=True), sides, gates.allow_env_drift, script)
    if chosen.chosen is not None:
        terminal.info(f"comparing run {chosen.chosen[0]} (old) with run {chosen.chosen[1]} (new)")
    for difference in chosen.drift:
        terminal.warning(f"comparing across environments: {difference}")
    compared = api.diff_paths(chosen.old, chosen.new, gates.threshold_pct, allow_empty=gates.allow_empty, drift=chosen.drift)
    _print_problems([compared.old, compared.new])
    if not compared.files_loaded:
        return ExitCode.BAD_INPUT
    emit(terminal, formatter.diff(compared, rows), output)
    if compared.old.errors or compared.new.errors:
        return ExitCode.BAD_INPUT
    if gates.fail_on_regression and compared.diff.regressions:
        regressed = count(len(compared.diff.regressions), "entry", "entries")
        terminal.error(f"{regressed} regressed by more than {gates.threshold_pct:g}%")
        return ExitCode.FINDING
    return ExitCode.OK


def _run_paths(references: list[str]) -> list[str]:
    from aoe_runner.runs.sources import run_paths

    return run_paths(run_store(reading=True), references)


def _print_problems(loaded: Sequence[Loaded]) -> None:
    for side in loaded:
        for info in side.files:
            for message in info.warnings:
                terminal.warning(f"{info.path}: {message}")
        for error in side.errors:
            terminal.error(error.message)
