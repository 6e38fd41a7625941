"""The terminal every command prints through, and the arguments of the command being run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aoe_runner.common.terminal import Terminal

if TYPE_CHECKING:
    from aoe_runner.runs.history import RunStore

terminal = Terminal()
INVOKED: list[str] = []  # for pages that name the command that made them


def run_store(local_only: str | None = None, reading: bool = False) -> RunStore:
    """The run store a command uses (store.config.open_store), its warnings on the terminal; -v says which it is."""
    from aoe_runner.store.config import open_store

    store = open_store(warn=terminal.warning, local_only=local_only, reading=reading)
    terminal.detail(f"run store: {store.describe()}")
    return store
