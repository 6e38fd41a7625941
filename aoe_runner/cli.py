"""The command line: parse, call the core, render, map to an exit code. Nothing else lives here."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aoe_runner import __version__
from aoe_runner._click import click_exceptions
from aoe_runner.crashlog import run_guarded
from aoe_runner.errors import AoeRunnerError, ExitCode, InputError, UsageError
from aoe_runner.render import OutputFormat
from aoe_runner.terminal import Terminal

DEFAULT_THRESHOLD_PCT = 2.0  # aoe_runner.diff's default (a test keeps them equal), so --help need not build diff models

app = typer.Typer(
    name="aoe-runner",
    help="Preflight, supervise and report on Huawei AOE (Ascend Optimization Engine) tuning runs.",
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
if TYPE_CHECKING:
    from aoe_runner.reporting import Loaded

terminal = Terminal()


def _version(value: bool) -> None:
    if value:
        terminal.result(f"aoe-runner {__version__}\n")
        raise typer.Exit(ExitCode.OK)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Preflight, supervise and report on Huawei AOE (Ascend Optimization Engine) tuning runs."""


@app.command()
def report(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Result files, directories (searched recursively) or glob patterns.", metavar="PATH", show_default=False
        ),
    ] = None,
    diff: Annotated[bool, typer.Option("--diff", help="Compare two sets of results: PATHS are OLD NEW.")] = False,
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = OutputFormat.TABLE,
    output: Annotated[
        str | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write here instead of stdout (only if there is a result; - is stdout)."
        ),
    ] = None,
    top: Annotated[
        int | None,
        typer.Option("--top", min=1, metavar="N", help="Rows per list [default: 20 for table/markdown, all otherwise]."),
    ] = None,
    min_gain: Annotated[
        str, typer.Option("--min-gain", metavar="PCT", help="Speed-up below this is 'no real gain' (PCT).")
    ] = "1%",
    threshold: Annotated[
        str | None,
        typer.Option("--threshold", metavar="PCT", help="With --diff: smallest change that counts (PCT) [default: 2%]."),
    ] = None,
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="With --diff: exit 1 when an entry regressed beyond --threshold.")
    ] = False,
    runs: Annotated[
        list[str] | None, typer.Option("--run", metavar="RUN", help="Add the result files of a recorded run (repeatable).")
    ] = None,
    allow_env_drift: Annotated[
        bool, typer.Option("--allow-env-drift", help="With --diff: compare runs recorded with different CANN/SoC/driver.")
    ] = False,
    script: Annotated[
        str | None,
        typer.Option(
            "--script", metavar="SCRIPT", help="With --diff and no paths: the last two succeeded tuning runs of this script."
        ),
    ] = None,
) -> int:
    """Summarise result files or recorded runs into the bank they imply; --diff compares two (default: the newest runs)."""
    from aoe_runner import reporting

    min_gain_pct = parse_percent(min_gain, "--min-gain")
    threshold_pct = DEFAULT_THRESHOLD_PCT if threshold is None else parse_percent(threshold, "--threshold")
    paths = paths or []
    if not diff:
        if fail_on_regression or threshold is not None or allow_env_drift or script is not None:
            raise UsageError("--threshold, --fail-on-regression, --allow-env-drift and --script need --diff")
        if not paths and not runs:
            raise UsageError("report needs a PATH (a result file, a directory or a glob pattern) or --run RUN")
        loaded = reporting.summarize_paths(paths + (_run_paths(runs) if runs else []), min_gain_pct)
        _print_problems([loaded])
        if not loaded.files_loaded:
            return ExitCode.BAD_INPUT
        _emit(loaded.render(output_format.formatter(), top), output)
        return ExitCode.BAD_INPUT if loaded.errors else ExitCode.OK
    if script is not None and (paths or runs):
        raise UsageError("--script picks the two runs to compare; it cannot be given with paths or --run")
    old_paths, new_paths = _diff_sides(paths + (runs or []), allow_env_drift, script)
    result, old, new = reporting.diff_paths(old_paths, new_paths, threshold_pct)
    _print_problems([old, new])
    if not old.files_loaded or not new.files_loaded:
        return ExitCode.BAD_INPUT
    _emit(output_format.formatter().diff(result, top), output)
    if old.errors or new.errors:
        return ExitCode.BAD_INPUT
    if fail_on_regression and result.regressions:
        terminal.error(f"{len(result.regressions)} entries regressed by more than {threshold_pct:g}%")
        return ExitCode.FINDING
    return ExitCode.OK


@app.command()
def validate(
    paths: Annotated[
        list[str], typer.Argument(help="Result files, directories or glob patterns.", metavar="PATH", show_default=False)
    ],
) -> int:
    """Check raw result files against the JSON Schema of AOE's format; print each error with its JSON path."""
    from aoe_runner.render.safe_text import visible
    from aoe_runner.results import find_result_files
    from aoe_runner.validation import validate_file

    files, errors = find_result_files(paths)
    violations = 0
    for path in files:
        try:
            problems = validate_file(path)
        except InputError as error:
            errors.append(error)
            continue
        violations += len(problems)
        for problem in problems:
            terminal.result(visible(f"{path}: {problem.json_path}: {problem.message}") + "\n")
        if not problems:
            terminal.result(visible(f"{path}: valid") + "\n")
    for error in errors:
        terminal.error(error.message)
    if errors:
        return ExitCode.BAD_INPUT
    return ExitCode.FINDING if violations else ExitCode.OK


@app.command()
def preflight(
    mode: Annotated[
        str | None, typer.Option("--mode", metavar="MODE", help="op or subgraph (or 2, 1) [default: from AOE_MODE, else op].")
    ] = None,
    procs: Annotated[int, typer.Option("--procs", min=1, metavar="P", help="Training processes in the script.")] = 1,
    model_memory: Annotated[
        str | None, typer.Option("--model-memory", metavar="SIZE", help="Memory the model needs, e.g. 12GiB.")
    ] = None,
    aoe_ini: Annotated[
        Path | None, typer.Option("--aoe-ini", metavar="PATH", help="aoe.ini to read [default: the documented places].")
    ] = None,
    soc: Annotated[
        str | None, typer.Option("--soc", metavar="NAME", help="SoC name, e.g. Ascend910B3 [default: npu-smi].")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the facts and every check as JSON.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")] = False,
    save_facts: Annotated[
        str | None, typer.Option("--save-facts", metavar="FILE", help="Also write the host facts to FILE (- is stdout).")
    ] = None,
    facts_file: Annotated[
        Path | None, typer.Option("--facts", metavar="FILE", help="Check saved facts instead of measuring this host.")
    ] = None,
) -> int:
    """Check this host against every documented AOE precondition: formula, measured value and fix for each."""
    from aoe_runner.preflight.facts import gather_facts
    from aoe_runner.preflight.plan import plan_for
    from aoe_runner.preflight.report import check_host, load_facts, write_facts

    if facts_file is not None and (aoe_ini is not None or soc is not None):
        raise UsageError("--aoe-ini and --soc describe this host; they cannot change saved --facts")
    facts = load_facts(facts_file) if facts_file is not None else gather_facts(aoe_ini=aoe_ini, soc=soc)
    plan = plan_for(mode, procs, model_memory, facts.environment)
    result = check_host(facts, plan)
    if save_facts is not None:
        write_facts(facts, save_facts)
        terminal.info(f"wrote {save_facts}")
    if as_json:
        from aoe_runner.jsontext import dump_json

        terminal.result(dump_json(result))
    else:
        from aoe_runner.render.preflight_table import render_preflight

        terminal.result(render_preflight(result))
    return result.exit_code(strict)


def _run_paths(references: list[str]) -> list[str]:
    from aoe_runner.home import runner_home
    from aoe_runner.runs.sources import run_result_paths
    from aoe_runner.runs.store import TUNING, RunStore

    store = RunStore(runner_home(), warn=terminal.warning)
    return [path for reference in references for path in run_result_paths(store, store.resolve(reference, kind=TUNING))]


def _diff_sides(sides: list[str], allow_env_drift: bool, script: str | None) -> tuple[list[str], list[str]]:
    """OLD and NEW as paths: two paths or runs, or with none the two newest succeeded tuning runs of one script and mode."""
    from aoe_runner.home import runner_home
    from aoe_runner.runs.sources import check_comparable, resolve_side, run_result_paths
    from aoe_runner.runs.store import RunStore

    store = RunStore(runner_home(), warn=terminal.warning)
    if not sides:
        old_run, new_run = store.latest_comparable_pair(script)
        terminal.info(f"comparing run {old_run.id} (old) with run {new_run.id} (new)")
        old_paths, new_paths = run_result_paths(store, old_run), run_result_paths(store, new_run)
    elif len(sides) == 2:
        (old_paths, old_run), (new_paths, new_run) = resolve_side(sides[0], store), resolve_side(sides[1], store)
    else:
        raise UsageError(f"--diff needs two paths or runs, OLD and NEW, or none for the two newest runs (got {len(sides)})")
    if old_run is not None and new_run is not None:
        for difference in check_comparable(old_run, new_run, allow_env_drift):
            terminal.warning(f"comparing across environments: {difference}")
    return old_paths, new_paths


def parse_percent(text: str, option: str) -> float:
    """'2', '2%' or '2.5 %' as a non-negative percentage."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise UsageError(f"{option}: {text!r} is not a percentage (for example 2 or 2%)") from None
    if not 0 <= value < 1000:
        raise UsageError(f"{option}: {text!r} must be between 0% and 1000%")
    return value


def _print_problems(loaded: Sequence[Loaded]) -> None:
    for side in loaded:
        for info in side.files:
            for message in info.warnings:
                terminal.warning(f"{info.path}: {message}")
        for error in side.errors:
            terminal.error(error.message)


def _emit(text: str, output: str | None) -> None:
    from aoe_runner.fsutil import STDOUT

    if output is None or output == STDOUT:
        terminal.result(text)
        return
    from aoe_runner.fsutil import write_output

    write_output(output, text)
    terminal.info(f"wrote {output}")


def run(argv: Sequence[str] | None = None) -> int:
    """Dispatch without the crash boundary: usage and domain errors become exit codes, bugs propagate."""
    command = typer.main.get_command(app)
    try:
        code = command.main(args=list(sys.argv[1:] if argv is None else argv), prog_name="aoe-runner", standalone_mode=False)
    except click_exceptions.UsageError as error:
        terminal.error(_usage_line(error))
        return ExitCode.USAGE
    except typer.Abort:  # EOF at a prompt; Ctrl-C is already Exit(130) inside typer
        terminal.error("interrupted")
        return ExitCode.INTERRUPTED
    except AoeRunnerError as error:
        terminal.error(error.message)
        return error.exit_code
    return int(code or 0)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    return run_guarded(lambda: run(arguments), arguments, terminal)


from aoe_runner import cli_runs  # noqa: E402, F401  (registers tune, runs and bank on app)


def _usage_line(error: click_exceptions.UsageError) -> str:
    command = error.ctx.command_path if error.ctx else "aoe-runner"
    return f"{error.format_message()} (see '{command} --help')"
