"""Shell completion for bash, zsh and fish: typer's own scripts and its answers to click's completion protocol."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Annotated

import typer

from aoe_runner.cli.terminal import terminal
from aoe_runner.errors import ExitCode, UsageError

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VARIABLE = "_AOE_RUNNER_COMPLETE"  # click's shell-completion protocol, for the program name aoe-runner
Shell = Annotated[
    str,
    typer.Argument(
        metavar="SHELL",
        help="bash, zsh or fish.",
        autocompletion=lambda incomplete: [s for s in SHELLS if s.startswith(incomplete)],
    ),
]


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


def choices(*values: str) -> Callable[[str], list[str]]:
    """A shell-completion answer for an option that takes one of `values`."""
    return lambda incomplete: [value for value in values if value.startswith(incomplete)]


FORMATS = choices("table", "json", "csv", "markdown", "html")
MODES = choices("op", "subgraph")
FRAMEWORKS = choices("auto", "tf", "mindspore", "pytorch")
KINDS = choices("tune", "verify")
STATUSES = choices("running", "succeeded", "failed", "timed_out", "interrupted", "abandoned")


RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]+")


def run_ids(incomplete: str) -> list[str]:
    """`latest` and the ids of the runs recorded in this home, newest first, that start with what was typed. Read from
    the names of the run directories alone: a completion opens no index (a FIFO or a damaged one cannot hang or
    change it) and reaches no server."""
    from aoe_runner.common.home import runner_home

    try:
        with os.scandir(runner_home() / "runs") as entries:
            ids = sorted((e.name for e in entries if RUN_ID.fullmatch(e.name) and e.is_dir(follow_symlinks=False)), reverse=True)
    except (OSError, ValueError):  # no history yet, or a home that is not a directory
        ids = []
    return [run_id for run_id in ["latest", *ids] if run_id.startswith(incomplete)]
