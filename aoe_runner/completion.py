"""Shell completion for bash, zsh and fish: typer's own scripts and its answers to click's completion protocol."""

from __future__ import annotations

from aoe_runner.errors import UsageError

SHELLS = ("bash", "zsh", "fish")


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
