"""Click as aoe-runner uses it: plain help, help on stdout for a bare group, `--` before script arguments, Ctrl-C.

Typer's own help shows types (`PATH <list[str]>`), braces (`{PATH}...`) and ranges as `[x>=1]`; the classes here
write metavars as a person types them and ranges in words, whatever typer version is installed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from enum import Enum
from functools import cache
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from aoe_runner.common.terminal import write
from aoe_runner.errors import ExitCode, Interrupted, UsageError

try:
    from typer._click import exceptions as click_exceptions
except ImportError:  # typer that depends on the click package
    from click import exceptions as click_exceptions  # type: ignore[no-redef,import-not-found,unused-ignore]

SCRIPT_ARGUMENTS = "arguments"  # the parameter that takes a script's own arguments, after --

__all__ = ["AoeCommand", "AoeGroup", "AoeTyper", "click_exceptions", "command_tree", "echo_stream"]


class AoeCommand(TyperCommand):
    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(_usage_piece(param))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        _format_parameters(self.get_params(ctx), formatter)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        after_dashes = len(args) - args.index("--") - 1 if "--" in args else 0
        _refuse_empty_values(self.params)
        rest = super().parse_args(ctx, args)
        if any(param.name == SCRIPT_ARGUMENTS for param in self.params):
            _refuse_script_arguments_before_dashes(ctx, after_dashes)
        return rest

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # typer would turn it into a silent exit 130
            raise Interrupted("interrupted") from None
        except UsageError as error:
            error.command_path = ctx.command_path  # type: ignore[attr-defined]  # for "(see '... --help')"
            raise


# typer's types for a path and a string, whichever version made them: an empty or blank value is refused
_REFUSING_EMPTY = {"TyperPath": "path", "Path": "path", "StringParamType": "value"}
# what an empty value may be given to: the script's own arguments, and -o, whose "" is bad input (exit 4) as any
# other output path that names no file is
MAY_BE_EMPTY = frozenset({SCRIPT_ARGUMENTS, "output"})
_EMPTY_HINTS = {  # by metavar
    "RUN": "give a run id, a unique prefix of one, or 'latest'",
    "STORE": "give 'local' or a postgresql:// URL",
}


def _refuse_empty_values(params: list[Any]) -> None:
    """Make each path and string parameter refuse an empty or blank value (_refusing_empty), but MAY_BE_EMPTY."""
    for param in params:
        kind: Any = type(param.type)
        if kind.__name__ in _REFUSING_EMPTY and param.name not in MAY_BE_EMPTY:
            param.type = copy.copy(param.type)  # click shares one string type among all its parameters
            param.type.__class__ = _refusing_empty(kind)


@cache
def _refusing_empty(kind: Any) -> Any:
    """`kind`, refusing an empty or blank value: pathlib reads "" as ".", the working directory, which an unset shell
    variable ("--to $BANK") would name without a word, and an empty filter (`runs prune --script ''`) matched every
    run."""
    what = _REFUSING_EMPTY[kind.__name__]

    class NonEmpty(kind):
        def convert(self, value: Any, param: Any, ctx: Any) -> Any:
            if isinstance(value, str) and not value.strip() and value != getattr(param, "default", None):  # given
                hint = _EMPTY_HINTS.get(str(getattr(param, "metavar", "")), "an unset variable?")
                self.fail(f"an empty {what} names nothing ({hint})", param, ctx)
            return super().convert(value, param, ctx)

    return NonEmpty


class AoeGroup(TyperGroup):
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _refuse_empty_values(self.params)
        if not args and not ctx.resilient_parsing:  # as git does: the help, on stdout, and a usage exit code
            write(typer.get_text_stream("stdout"), ctx.get_help() + "\n")
            ctx.exit(ExitCode.USAGE)
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [self.options_metavar or "[OPTIONS]", "COMMAND [ARGS]..."]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        _format_parameters(self.get_params(ctx), formatter)
        self.format_commands(ctx, formatter)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Each command with the first sentence of its help, whole (click would cut it off with '...')."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, _first_sentence(command.help or "")))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class AoeTyper(typer.Typer):
    """A Typer whose commands are AoeCommands and whose groups are AoeGroups."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(cls=AoeGroup, rich_markup_mode=None, **settings)

    def command(self, *args: Any, cls: type[TyperCommand] | None = None, **kwargs: Any) -> Callable[[Any], Any]:
        return super().command(*args, cls=cls or AoeCommand, **kwargs)


def command_tree(
    application: Callable[[Sequence[str]], typer.Typer | None], arguments: Sequence[str], value_options: Sequence[str] = ()
) -> Any:
    """The click command to run `arguments` with. typer builds each command from its function's signature (not
    free): when the arguments name a command (or a group and its command), after any root options (`value_options`
    take a value), only that branch is imported and built. When they name none (`--help`, `-V`, no command, a name
    that is no command), every command is built without its options: the root's help and its suggestions need only
    the names and the first sentences of their help."""
    words = list(arguments)
    start = _first_word(words, set(value_options))
    if start is not None:
        narrowed = application(words[start : start + 2])
        if narrowed is not None:
            return typer.main.get_command(narrowed)
    whole = application(())
    assert whole is not None  # an empty path names every command
    return typer.main.get_command(_names_only(whole))


def _first_word(arguments: list[str], value_options: set[str]) -> int | None:
    """Where the first argument that is not a root option (or its value) is; None when there is none."""
    index = 0
    while index < len(arguments):
        word = arguments[index]
        if word == "--":  # what follows is positional to click: the command, if any
            return index + 1 if index + 1 < len(arguments) else None
        if not word.startswith("-"):
            return index
        index += 2 if word in value_options else 1
    return None


def _names_only(app: typer.Typer) -> typer.Typer:
    """A copy of `app` whose commands take no parameters: named and described as they are, never run."""
    shown = copy.copy(app)
    shown.registered_commands = [copy.copy(command) for command in app.registered_commands]
    for command in shown.registered_commands:
        command.callback = _described(command.callback)
    shown.registered_groups = [copy.copy(group) for group in app.registered_groups]
    for group in shown.registered_groups:
        group.typer_instance = _names_only(group.typer_instance)  # type: ignore[arg-type]
    return shown


def _described(callback: Callable[..., Any] | None) -> Callable[..., Any]:
    def described() -> None:
        raise AssertionError("a command of the names-only tree is never run")

    described.__name__ = getattr(callback, "__name__", "command")
    described.__doc__ = getattr(callback, "__doc__", None)
    return described


def echo_stream(error: BaseException) -> Any:
    """The stream click's echo was writing (help, a message) when `error` was raised inside it, else None."""
    trace = error.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    if trace is None:
        return None
    frame = trace.tb_frame
    if frame.f_code.co_name == "echo" and "click" in str(frame.f_globals.get("__name__", "")):
        return frame.f_locals.get("file")
    return None


def _refuse_script_arguments_before_dashes(ctx: Any, after_dashes: int) -> None:
    taken = list(ctx.params.get(SCRIPT_ARGUMENTS) or ())
    stray = taken[: len(taken) - after_dashes]
    if stray:
        error = UsageError(
            f"{ctx.command_path}: {stray[0]!r} is not an option; the script's own arguments go after --, "
            f"as in: {ctx.command_path} SCRIPT [OPTIONS] -- {' '.join(stray)}"
        )
        error.command_path = ctx.command_path  # type: ignore[attr-defined]
        raise error


def _first_sentence(text: str) -> str:
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    return paragraph.split(": ")[0].split("; ")[0].rstrip(".")


def _usage_piece(param: Any) -> str:
    name = _metavar(param)
    if param.name == SCRIPT_ARGUMENTS:
        return f"[-- {name}...]"
    many = "..." if param.nargs != 1 else ""
    return f"{name}{many}" if param.required else f"[{name}]{many}"


def _metavar(param: Any) -> str:
    return (param.metavar or param.name.upper()).rstrip(".")


def _format_parameters(params: Sequence[Any], formatter: Any) -> None:
    arguments = [(_metavar(p), p.help or "") for p in params if p.param_type_name == "argument" and not p.hidden]
    options = [_option_record(p) for p in params if p.param_type_name == "option" and not p.hidden]
    if arguments:
        with formatter.section("Arguments"):
            formatter.write_dl(arguments)
    if options:
        with formatter.section("Options"):
            formatter.write_dl(options)


def _option_record(param: Any) -> tuple[str, str]:
    names = ", ".join(sorted(param.opts, key=len))
    if not param.is_flag and not getattr(param, "count", False):
        names += f" {param.metavar or 'VALUE'}"
    extra = [text for text in (_default_text(param), _range_text(param)) if text]
    help_text = param.help or ""
    return names, f"{help_text} [{'; '.join(extra)}]" if extra else help_text


def _default_text(param: Any) -> str | None:
    if isinstance(param.show_default, str):
        return f"default: {param.show_default}"
    default = param.default
    if not param.show_default or param.is_flag or default is None or default == () or callable(default):
        return None
    return f"default: {default.value if isinstance(default, Enum) else default}"


def _range_text(param: Any) -> str | None:
    kind = getattr(param, "type", None)
    low = getattr(param, "min", getattr(kind, "min", None))
    high = getattr(param, "max", getattr(kind, "max", None))
    if low is None and high is None:
        return None
    if high is None:
        return f"at least {low}"
    if low is None:
        return f"at most {high}"
    return f"from {low} to {high}"
