"""The command line: parse, call the core, render, map to an exit code. Nothing else lives here."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aoe_runner import __version__, collector
from aoe_runner._click import AoeTyper, click_exceptions, command_tree, echo_stream
from aoe_runner.cli_options import (
    CSV,
    HTML,
    JSON,
    MARKDOWN,
    TABLE,
    choose_format,
    emit,
    format_option,
    json_option,
    output_option,
    parse_percent,
    required_text,
    whole_number,
    wide_option,
)
from aoe_runner.crashlog import run_guarded
from aoe_runner.errors import AoeRunnerError, ExitCode, InputError, UsageError
from aoe_runner.exiting import leave
from aoe_runner.terminal import Terminal, output_failure

DEFAULT_THRESHOLD_PCT = 2.0  # aoe_runner.diff's default (a test keeps them equal), so --help need not build diff models
COMPLETE_VARIABLE = "_AOE_RUNNER_COMPLETE"  # click's shell-completion protocol, for the program name aoe-runner
INVOKED: list[str] = []  # the arguments of the command being run

app = AoeTyper(
    name="aoe-runner",
    help="Preflight, supervise and report on Huawei AOE (Ascend Optimization Engine) tuning runs.",
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
if TYPE_CHECKING:
    from aoe_runner.render import Formatter
    from aoe_runner.reporting import Loaded
    from aoe_runner.runs.manifest import RunManifest

terminal = Terminal()
__all__ = ["app", "main", "parse_percent", "run"]


def _version(value: bool) -> None:
    if value:
        terminal.result(f"aoe-runner {__version__}\n")
        raise typer.Exit(ExitCode.OK)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    store: Annotated[
        str | None,
        typer.Option("--store", metavar="URL", help="The run store: postgresql://... or local [default: AOE_RUNNER_STORE]."),
    ] = None,
) -> None:
    """Preflight, supervise and report on Huawei AOE (Ascend Optimization Engine) tuning runs."""
    if store is not None:
        from aoe_runner.store.config import choose_store

        choose_store(store)


@app.command()
@collector.paused_throughout  # many objects, no cycles: see collector.py
def report(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Result files, directories (searched recursively) or glob patterns.", metavar="PATH"),
    ] = None,
    diff: Annotated[bool, typer.Option("--diff", help="Compare two sets of results: the two PATHs are OLD and NEW.")] = False,
    output_format: Annotated[str | None, format_option(TABLE, JSON, CSV, MARKDOWN, HTML, notes=" (html: with -o FILE)")] = None,
    as_json: Annotated[bool, json_option()] = False,
    output: Annotated[str | None, output_option("Write the result (only when there is one)")] = None,
    wide: Annotated[bool, wide_option()] = False,
    top: Annotated[
        str | None,
        typer.Option(
            "--top", metavar="N", help="Rows per list, at least 1 [default: 20 for table and markdown, 2000 for html, else all]."
        ),
    ] = None,
    min_gain: Annotated[str, typer.Option("--min-gain", metavar="PCT", help="Speed-up below this is 'no real gain'.")] = "1%",
    threshold: Annotated[
        str | None,
        typer.Option("--threshold", metavar="PCT", help="With --diff: the smallest change that counts [default: 2%]."),
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
    samples: Annotated[bool, typer.Option("--samples", help="Add the sample result files shipped with aoe-runner.")] = False,
    allow_empty: Annotated[
        bool, typer.Option("--allow-empty", help="A named file that holds no report is no error (default: exit 4).")
    ] = False,
) -> int:
    """Summarise result files or recorded runs into the bank they imply; --diff compares two (default: the newest runs)."""
    from aoe_runner import reporting

    chosen = choose_format(output_format, as_json, (TABLE, JSON, CSV, MARKDOWN, HTML))
    rows = whole_number(top, "--top", minimum=1)
    min_gain_pct = parse_percent(min_gain, "--min-gain")
    threshold_pct = DEFAULT_THRESHOLD_PCT if threshold is None else parse_percent(threshold, "--threshold")
    paths = (paths or []) + ([str(_samples_directory())] if samples else [])
    runs = [required_text(reference, "--run") for reference in runs or []]
    formatter: Formatter
    if chosen is HTML:
        from aoe_runner.cli_html import html_formatter

        formatter = html_formatter(output)
    else:
        formatter = chosen.formatter(width=terminal.width(wide))
    if not diff:
        if fail_on_regression or threshold is not None or allow_env_drift or script is not None:
            raise UsageError("--threshold, --fail-on-regression, --allow-env-drift and --script need --diff")
        if not paths and not runs:
            raise UsageError("report needs a PATH (a result file, a directory or a glob pattern), --run RUN or --samples")
        loaded = reporting.summarize_paths(paths + (_run_paths(runs) if runs else []), min_gain_pct, allow_empty=allow_empty)
        _print_problems([loaded])
        getattr(formatter, "problems", []).extend(error.message for error in loaded.errors)  # html: on the page too
        if not loaded.files_loaded:
            return ExitCode.BAD_INPUT
        emit(terminal, loaded.render(formatter, rows), output)
        code = ExitCode.BAD_INPUT if loaded.errors else ExitCode.OK
        leave(code)  # as the program: without freeing the summary one object at a time (exiting.py)
        return code
    if script is not None and (paths or runs):
        raise UsageError("--script picks the two runs to compare; it cannot be given with paths or --run")
    old_paths, new_paths = _diff_sides(paths + runs, allow_env_drift, script, getattr(formatter, "drift", []))
    result, old, new = reporting.diff_paths(old_paths, new_paths, threshold_pct, allow_empty=allow_empty)
    _print_problems([old, new])
    getattr(formatter, "problems", []).extend(error.message for side in (old, new) for error in side.errors)
    if not old.files_loaded or not new.files_loaded:
        return ExitCode.BAD_INPUT
    emit(terminal, formatter.diff(result, rows), output)
    if old.errors or new.errors:
        return ExitCode.BAD_INPUT
    if fail_on_regression and result.regressions:
        regressed = _count(len(result.regressions), "entry", "entries")
        terminal.error(f"{regressed} regressed by more than {threshold_pct:g}%")
        return ExitCode.FINDING
    return ExitCode.OK


@app.command()
def validate(
    paths: Annotated[list[str] | None, typer.Argument(help="Result files, directories or glob patterns.", metavar="PATH")] = None,
    output_format: Annotated[str | None, format_option(TABLE, JSON, CSV, notes=" (table: one line per file or error)")] = None,
    as_json: Annotated[bool, json_option()] = False,
    output: Annotated[str | None, output_option()] = None,
) -> int:
    """Check raw result files against the JSON Schema of AOE's format; print each error with its JSON path."""
    from aoe_runner.render.validate_report import FileCheck, render_validation
    from aoe_runner.results.files import find_result_files
    from aoe_runner.validation import validate_file

    chosen = choose_format(output_format, as_json, (TABLE, JSON, CSV))
    if not paths:
        raise UsageError("validate needs a PATH (a result file, a directory or a glob pattern)")
    files, errors = find_result_files(paths)
    checked: list[FileCheck] = []
    for path in files:
        try:
            checked.append(FileCheck(str(path), validate_file(path)))
        except InputError as error:
            errors.append(error)
    emit(terminal, render_validation(checked, errors, chosen), output)
    for problem in errors:
        terminal.error(problem.message)
    if errors:
        return ExitCode.BAD_INPUT
    return ExitCode.FINDING if any(check.problems for check in checked) else ExitCode.OK


@app.command()
def preflight(
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode", metavar="MODE", help="op (also 2, opat) or subgraph (also 1, sgat) [default: from AOE_MODE, else op]."
        ),
    ] = None,
    procs: Annotated[str, typer.Option("--procs", metavar="P", help="Training processes in the script, at least 1.")] = "1",
    model_memory: Annotated[
        str | None, typer.Option("--model-memory", metavar="SIZE", help="Memory the model needs, e.g. 12GiB.")
    ] = None,
    aoe_ini: Annotated[
        Path | None,
        typer.Option("--aoe-ini", metavar="PATH", readable=False, help="aoe.ini to read [default: the documented places]."),
    ] = None,
    soc: Annotated[
        str | None, typer.Option("--soc", metavar="NAME", help="SoC name, e.g. Ascend910B3 [default: npu-smi].")
    ] = None,
    output_format: Annotated[
        str | None, format_option(TABLE, JSON, MARKDOWN, CSV, notes=" (json: the facts and every check)")
    ] = None,
    as_json: Annotated[bool, json_option()] = False,
    output: Annotated[str | None, output_option()] = None,
    wide: Annotated[bool, wide_option()] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")] = False,
    save_facts: Annotated[
        str | None, typer.Option("--save-facts", metavar="FILE", help="Also write the host facts to FILE (- is stdout).")
    ] = None,
    facts_file: Annotated[
        Path | None,
        typer.Option("--facts", metavar="FILE", readable=False, help="Check saved facts instead of measuring this host."),
    ] = None,
) -> int:
    """Check this host against every documented AOE precondition: formula, measured value and fix for each."""
    from aoe_runner.preflight.facts import gather_facts
    from aoe_runner.preflight.plan import plan_for
    from aoe_runner.preflight.report import check_host, load_facts, refuse_unreadable_ini, write_facts
    from aoe_runner.render.preflight_table import render_preflight_as

    chosen = choose_format(output_format, as_json, (TABLE, JSON, MARKDOWN, CSV))
    processes = whole_number(procs, "--procs", minimum=1) or 1
    if facts_file is not None and (aoe_ini is not None or soc is not None):
        raise UsageError("--aoe-ini and --soc describe this host; they cannot change saved --facts")
    if aoe_ini is not None:
        refuse_unreadable_ini(aoe_ini)
    facts = load_facts(facts_file) if facts_file is not None else gather_facts(aoe_ini=aoe_ini, soc=soc)
    plan = plan_for(mode, processes, model_memory, facts.environment)
    result = check_host(facts, plan)
    if save_facts is not None:
        write_facts(facts, save_facts)
        terminal.info(f"wrote {save_facts}")
    emit(terminal, render_preflight_as(result, chosen, terminal.width(wide)), output)
    return result.exit_code(strict)


@app.command()
def completion(
    shell: Annotated[str, typer.Argument(metavar="SHELL", help="bash, zsh or fish.")],
) -> int:
    """Print the shell-completion script for bash, zsh or fish; README's "Shell completion" says where it goes."""
    from aoe_runner.completion import completion_script

    terminal.result(completion_script(shell, COMPLETE_VARIABLE))
    return ExitCode.OK


def _samples_directory() -> Path:
    """sample_results/ as installed with the package (package data), else beside the package in a clone."""
    from importlib.resources import files

    shipped = Path(str(files("aoe_runner"))) / "sample_results"
    in_clone = Path(__file__).resolve().parent.parent / "sample_results"
    found = next((path for path in (shipped, in_clone) if path.is_dir()), None)
    if found is None:
        raise InputError("--samples", f"the sample result files are not installed (looked in {shipped} and {in_clone})")
    return found


def _run_paths(references: list[str]) -> list[str]:
    from aoe_runner.runs.sources import run_result_paths
    from aoe_runner.runs.store import TUNING
    from aoe_runner.store.config import open_store

    store = open_store(warn=terminal.warning)
    return [path for reference in references for path in run_result_paths(store, store.resolve(reference, kind=TUNING))]


def _diff_sides(sides: list[str], allow_env_drift: bool, script: str | None, drift: list[str]) -> tuple[list[str], list[str]]:
    """OLD and NEW as paths: two paths or runs, or with none the two newest succeeded tuning runs of one script and mode;
    the differences of the two runs' environments, when they are allowed, are added to drift."""
    from aoe_runner.runs.sources import check_comparable, resolve_side, run_result_paths
    from aoe_runner.store.config import open_store

    store = open_store(warn=terminal.warning)
    old_run: RunManifest | None
    new_run: RunManifest | None
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
            drift.append(difference)
    return old_paths, new_paths


def _print_problems(loaded: Sequence[Loaded]) -> None:
    for side in loaded:
        for info in side.files:
            for message in info.warnings:
                terminal.warning(f"{info.path}: {message}")
        for error in side.errors:
            terminal.error(error.message)


def _emit(text: str | bytes, output: str | None) -> None:
    """emit() on this CLI's terminal (verify calls it)."""
    emit(terminal, text, output)


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def run(argv: Sequence[str] | None = None) -> int:
    """Dispatch without the crash boundary: usage and domain errors become exit codes, bugs propagate."""
    import os

    INVOKED[:] = list(sys.argv[1:] if argv is None else argv)  # for pages that name the command that made them
    if os.environ.get(COMPLETE_VARIABLE):
        from aoe_runner.completion import prepare_completion

        prepare_completion()
        command = typer.main.get_command(app)  # completion lists every command
    else:
        command = command_tree(app, INVOKED)
    try:
        code = command.main(args=INVOKED.copy(), prog_name="aoe-runner", standalone_mode=False)
    except click_exceptions.UsageError as error:
        terminal.error(usage_line(error))
        return ExitCode.USAGE
    except typer.Abort:  # EOF at a prompt
        terminal.error("interrupted")
        return ExitCode.INTERRUPTED
    except UsageError as error:
        terminal.error(f"{error.message} (see '{getattr(error, 'command_path', 'aoe-runner')} --help')")
        return error.exit_code
    except AoeRunnerError as error:
        terminal.error(error.message)
        return error.exit_code
    except OSError as error:  # click could not write help or a message: stdout full, or its reader gone
        return _echo_failed(error)
    return int(code or 0)


def _echo_failed(error: OSError) -> int:
    stream = echo_stream(error)
    if stream is None:
        raise error  # not a write of click's: a bug, for the crash boundary
    failure = output_failure(error, stream)
    if failure is None:
        return ExitCode.OK
    terminal.error(failure.message)
    return failure.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    return run_guarded(lambda: run(arguments), arguments, terminal)


def usage_line(error: click_exceptions.UsageError) -> str:
    """Click's usage errors in aoe-runner's voice: `what: why (see '... --help')`."""
    from aoe_runner.cli_options import usage_message

    command = error.ctx.command_path if error.ctx else "aoe-runner"
    return f"{usage_message(error, command)} (see '{command} --help')"


from aoe_runner import cli_html, cli_runs, cli_store  # noqa: E402, F401  (register tune, verify, runs, bank, store, runs report)
