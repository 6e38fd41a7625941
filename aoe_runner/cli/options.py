"""The options every command shares (--format, --json, -o, --wide) and the parsing of values, in one voice.

Import-light on purpose: every command's `--help` builds these. A command takes the value as text and parses it
here, so a bad value reads the same whichever typer is installed: `--top: '-1' is not a whole number of at least 1`.
An option used by several commands is declared once, as an `Annotated` type a command's signature names.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from aoe_runner.cli import completion
from aoe_runner.common.quantities import ascii_whole
from aoe_runner.common.terminal import Terminal
from aoe_runner.errors import UsageError
from aoe_runner.render.output_format import OutputFormat

if TYPE_CHECKING:
    from aoe_runner.cli.click_glue import click_exceptions
    from aoe_runner.common.terminal import Pieces
    from aoe_runner.runs.status import RunStatus

LARGEST_COUNT = 2**31 - 1  # a count or id past this is a typo (and past 2**63 an index cannot hold it)
TABLE, JSON, CSV, MARKDOWN = OutputFormat.TABLE, OutputFormat.JSON, OutputFormat.CSV, OutputFormat.MARKDOWN
HTML = OutputFormat.HTML


def format_option(*formats: OutputFormat, notes: str = "") -> typer.models.OptionInfo:
    """`--format/-f FORMAT`, taken as text; choose_format() checks it against the same formats."""
    names = _or(f.value for f in formats)
    offered = [f.value for f in formats]
    return typer.Option(
        "--format", "-f", metavar="FORMAT", help=f"{names}{notes}.", show_default=False,
        autocompletion=lambda incomplete: [name for name in offered if name.startswith(incomplete)],
    )  # fmt: skip


def framework_option(what_auto_means: str) -> typer.models.OptionInfo:
    """`--framework tf|mindspore|pytorch|auto`, taken as text; frameworks.kinds.Framework.parse reads it."""
    from aoe_runner.cli import completion

    return typer.Option(
        "--framework", metavar="NAME", help=f"tf, mindspore, pytorch, or auto: {what_auto_means}.",
        autocompletion=completion.FRAMEWORKS,
    )  # fmt: skip


def json_option() -> typer.models.OptionInfo:
    return typer.Option("--json", help="The same as --format json.")


def output_option(what: str = "Write the output") -> typer.models.OptionInfo:
    return typer.Option("--output", "-o", metavar="FILE", help=f"{what} to FILE instead of stdout (- is stdout).")


def script_filter_option() -> typer.models.OptionInfo:
    """`--script SCRIPT` of the commands that choose runs (runs.index.conditions matches it)."""
    exactly = "Only runs of this script: a path matches it exactly, a bare name every script so named."
    return typer.Option("--script", metavar="SCRIPT", help=exactly)


def wide_option() -> typer.models.OptionInfo:
    return typer.Option("--wide", help="Keep full lines: do not fit tables to the terminal's width.")


JsonFlag = Annotated[bool, json_option()]
OutputFile = Annotated[str | None, output_option()]
WideFlag = Annotated[bool, wide_option()]
ScriptFilter = Annotated[str | None, script_filter_option()]
ScriptArguments = Annotated[
    list[str] | None, typer.Argument(metavar="ARGS", help="Arguments for the script, after --.", show_default=False)
]
KindFilter = Annotated[
    str | None, typer.Option("--kind", metavar="KIND", help="Only tune or only verify runs.", autocompletion=completion.KINDS)
]
SocFilter = Annotated[str | None, typer.Option("--soc", metavar="SOC", help="Only runs on this SoC (e.g. Ascend910B3).")]
Python = Annotated[
    str, typer.Option("--python", metavar="EXE", help="Interpreter for a .py script [default: this one].", show_default=False)
]
THIS_PYTHON = sys.executable


def choose_format(value: str | None, as_json: bool, formats: Sequence[OutputFormat]) -> OutputFormat:
    """The format --format names (any case), or json for --json; table when neither is given."""
    if as_json:
        if value is not None and value.strip().lower() != JSON.value:
            raise UsageError(f"--json and --format {value} ask for two formats: give one")
        return JSON
    if value is None:
        return formats[0]
    chosen = next((f for f in formats if f.value == value.strip().lower()), None)
    if chosen is None:
        raise UsageError(f"--format: {value!r} is not one of {', '.join(f.value for f in formats)}")
    return chosen


def whole_number(text: str | None, option: str, minimum: int = 0, maximum: int = LARGEST_COUNT) -> int | None:
    """'20' as 20 for an option that takes a count or an id (at most LARGEST_COUNT unless said); None stays None."""
    if text is None:
        return None
    expected = f"from {minimum} to {maximum}" if maximum != LARGEST_COUNT else f"of at least {minimum}"
    value = ascii_whole(text)
    if value is None or value < minimum or value > maximum:
        raise UsageError(f"{option}: {text!r} is not a whole number {expected}")
    return value


def emit(terminal: Terminal, text: str | bytes | Pieces, output: str | None) -> None:
    """The result on stdout, or into FILE (atomically; `-` is stdout), and a line on stderr saying where it went."""
    from aoe_runner.common.files import STDOUT

    if output is None or output == STDOUT:
        terminal.result(text)
        return
    from aoe_runner.common.files import write_output

    write_output(output, text)
    terminal.info(f"wrote {output}")


def _or(names: Iterable[str]) -> str:
    items = list(names)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def usage_message(error: click_exceptions.ClickException, command: str) -> str:
    """A click usage error as one line in aoe-runner's voice, without click's and typer's phrasing."""
    from aoe_runner.cli.click_glue import SCRIPT_ARGUMENTS, click_exceptions

    param = getattr(error, "param", None)
    short = command.removeprefix("aoe-runner ").strip()
    if isinstance(error, click_exceptions.MissingParameter) and param is not None and param.param_type_name == "argument":
        name = (param.metavar or param.name.upper()).rstrip(".")
        why = (param.help or "").rstrip(".")
        return f"{short} needs {name}" + (f" ({why[:1].lower()}{why[1:]})" if why else "")
    message = error.format_message().strip().rstrip(".")
    if isinstance(error, click_exceptions.BadParameter) and param is not None:
        return f"{_option_name(param)}: {_plain(message.split(': ', 1)[-1])}"
    command_object = getattr(getattr(error, "ctx", None), "command", None)
    takes_script = any(p.name == SCRIPT_ARGUMENTS for p in getattr(command_object, "params", []))
    if isinstance(error, click_exceptions.NoSuchOption) and takes_script:
        return f"{message}; the script's own options go after --"
    return message


def _option_name(param: object) -> str:
    """An option by its longest name (`--script`), an argument by its metavar (`STORE`), as its help shows them."""
    if getattr(param, "param_type_name", None) == "argument":
        return str(getattr(param, "metavar", None) or getattr(param, "name", "value")).rstrip(".").strip("[]")
    opts = getattr(param, "opts", None) or [getattr(param, "name", "value")]
    return max(opts, key=len)


_TYPER_PHRASES = (
    ("Value error, ", ""),
    ("Input should be a valid integer, unable to parse string as an integer", "is not a whole number"),
    ("Input should be greater than or equal to ", "must be at least "),
    ("Input should be less than or equal to ", "must be at most "),
)


def _plain(message: str) -> str:
    for phrase, plain in _TYPER_PHRASES:
        message = message.replace(phrase, plain)
    return message


def parse_kind(text: str | None) -> str | None:
    """--kind: tune or verify, any case."""
    if text is None:
        return None
    if text.strip().lower() not in ("tune", "verify"):
        raise UsageError(f"--kind: {text!r} is not one of tune, verify")
    return text.strip().lower()


def parse_status(text: str | None) -> RunStatus | None:
    """--status: a run status by its name, any case, `-` for `_`."""
    from aoe_runner.runs.status import RunStatus

    if text is None:
        return None
    try:
        return RunStatus(text.strip().lower().replace("-", "_"))
    except ValueError:
        names = ", ".join(status.value for status in RunStatus)
        raise UsageError(f"--status: {text!r} is not one of {names}") from None


def split_names(values: list[str] | None) -> tuple[str, ...]:
    """A repeatable option of comma-separated names (--skip a,b --skip c) as one tuple, blanks dropped."""
    return tuple(name.strip() for names in values or [] for name in names.split(",") if name.strip())
