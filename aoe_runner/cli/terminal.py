"""The terminal every command prints through, and the arguments of the command being run."""

from __future__ import annotations

from aoe_runner.common.terminal import Terminal

terminal = Terminal()
INVOKED: list[str] = []  # for pages that name the command that made them
