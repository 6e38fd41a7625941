"""`aoe-runner validate`: raw result files against the JSON Schema of AOE's format."""

from __future__ import annotations

from typing import Annotated

import typer

from aoe_runner.cli.options import CSV, JSON, TABLE, JsonFlag, OutputFile, emit, format_option
from aoe_runner.cli.pages import formatter_for
from aoe_runner.cli.terminal import terminal
from aoe_runner.errors import ExitCode, UsageError

FORMATS = (TABLE, JSON, CSV)
Paths = Annotated[list[str] | None, typer.Argument(help="Result files, directories or glob patterns.", metavar="PATH")]
Format = Annotated[str | None, format_option(*FORMATS, notes=" (table: one line per file or error)")]


def validate(paths: Paths = None, output_format: Format = None, as_json: JsonFlag = False, output: OutputFile = None) -> int:
    """Check raw result files against the JSON Schema of AOE's format; print each error with its JSON path."""
    from aoe_runner.results.validation import validate_paths

    formatter = formatter_for(output_format, as_json, FORMATS, output)
    if not paths:
        raise UsageError("validate needs a PATH (a result file, a directory or a glob pattern)")
    checked, errors = validate_paths(paths)
    emit(terminal, formatter.validation(checked, errors), output)
    for problem in errors:
        terminal.error(problem.message)
    if errors:
        return ExitCode.BAD_INPUT
    return ExitCode.FINDING if any(check.problems for check in checked) else ExitCode.OK
