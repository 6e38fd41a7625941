"""The command line's entry: every command registered, one dispatch, one error boundary, one exit-code contract.

Each command module parses its options, calls the core, renders through one Formatter and returns an exit code
(errors.ExitCode); this module turns usage and domain errors into one line on stderr and that code, and
crashlog.run_guarded turns anything unexpected into exit 3 and a crash log.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import typer

from aoe_runner.cli import completion
from aoe_runner.cli.app import ROOT_VALUE_OPTIONS, application, whole_application
from aoe_runner.cli.click_glue import click_exceptions, command_tree, echo_stream
from aoe_runner.cli.crashlog import run_guarded
from aoe_runner.cli.options import usage_message
from aoe_runner.cli.terminal import INVOKED, terminal
from aoe_runner.common import colour
from aoe_runner.common.terminal import output_failure
from aoe_runner.errors import AoeRunnerError, ExitCode, UsageError

__all__ = ["main", "run"]  # and `app`, the whole command tree, read through __getattr__


def __getattr__(name: str) -> object:
    """`app`: the whole command tree (aoe_runner.cli.app.app)."""
    if name == "app":
        from aoe_runner.cli import app as tree

        return tree.app
    raise AttributeError(name)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    return run_guarded(lambda: run(arguments), arguments, terminal)


def run(argv: Sequence[str] | None = None) -> int:
    """Dispatch without the crash boundary: usage and domain errors become exit codes, bugs propagate."""
    INVOKED[:] = list(sys.argv[1:] if argv is None else argv)
    colour.choose("auto")  # --color and -q are this command's: an earlier command in the same process chose for itself
    terminal.quiet = False
    terminal.verbose = False
    if "aoe_runner.store.config" in sys.modules:  # forget an earlier command's --store; a first command has none
        sys.modules["aoe_runner.store.config"].choose_store(None)
    if os.environ.get(completion.COMPLETE_VARIABLE):
        completion.prepare_completion()
        command = typer.main.get_command(whole_application())  # completion lists every command
    else:
        command = command_tree(application, INVOKED, ROOT_VALUE_OPTIONS)
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


def usage_line(error: click_exceptions.UsageError) -> str:
    """Click's usage errors in aoe-runner's voice: `what: why (see '... --help')`."""
    command = error.ctx.command_path if error.ctx else "aoe-runner"
    return f"{usage_message(error, command)} (see '{command} --help')"


def _echo_failed(error: OSError) -> int:
    stream = echo_stream(error)
    if stream is None:
        raise error  # not a write of click's: a bug, for the crash boundary
    failure = output_failure(error, stream)
    if failure is None:
        return ExitCode.OK
    terminal.error(failure.message)
    return failure.exit_code
