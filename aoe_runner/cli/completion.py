"""Shell completion for bash, zsh and fish: typer's own scripts and its answers to click's completion protocol."""

from __future__ import annotations

from typing import Annotated

import typer

from aoe_runner.cli.terminal import terminal
from aoe_runner.errors import ExitCode, UsageError

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VARIABLE = "_AOE_RUNNER_COMPLETE"  # click's shell-completion protocol, for the program name aoe-runner
Shell = Annotated[str, typer.Argument(metavar="SHELL", help="bash, zsh or fish.")]


def completion(shell: Shell) -> int:
    """Print the shell-completion script for bash, zsh or fish; docs/guide/conventions.md says where it goes."""
    terminal.result(completion_script(shell, COMPLETE_VARIABLE))
    return ExitCode.OK


def completion_script(shell: str, complete_variable: str) -> str:
    """The script that a shell sources to complete aoe-runner's commands, options and paths."""
    from typer._completion_shared import get_completion_script

    name = shell.strip().lower()
    if name not in SHELLS:
        raise UsageError(f"completion: {shell!r} is not one of {', '.join(SHELLS)}")
    prepare_completion()
    return get_completion_script(prog_name="aoe-runner", complete_var=complete_variable, shell=name).rstrip("\n") + "\n"


def prepare_completion() -> None:
    """Register typer's completion classes; only a completion request pays for importing them."""
    from typer._completion_classes import completion_init

    completion_init()
