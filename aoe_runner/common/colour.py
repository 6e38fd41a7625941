"""Colour on a terminal only: FAIL red, WARN yellow, verdicts green or red; never in pipes, files or JSON.

Whether to colour: `--color always|never` wins; else `NO_COLOR` (set and not empty) turns it off (no-color.org);
else `FORCE_COLOR` (set, not empty and not 0) turns it on; else only a terminal (not TERM=dumb) gets it. Colour is
added to text aoe-runner wrote itself, after every name has been escaped (safe_text.visible), so no name carries an
escape sequence to the terminal.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

from aoe_runner.common.terminal import isatty

CHOICES = ("auto", "always", "never")
RED, YELLOW, GREEN = "\x1b[31m", "\x1b[33m", "\x1b[32m"
BOLD_RED = "\x1b[1;31m"
RESET = "\x1b[0m"
# Words aoe-runner writes that carry a verdict, and their colour (preflight's statuses, diffs, runs, verify).
VERDICTS: Mapping[str, str] = {
    "FAIL": BOLD_RED,
    "WARN": YELLOW,
    "regressed": RED,
    "improved": GREEN,
    "failed": RED,
    "timed_out": RED,
    "abandoned": YELLOW,
    "interrupted": YELLOW,
    "succeeded": GREEN,
    "faster": GREEN,
    "slower": RED,
}

_choice: list[str] = []  # --color, when given


def choose(choice: str) -> None:
    """--color: this command's choice, ahead of the environment."""
    _choice[:] = [choice]


def wanted(stream: TextIO | None, env: Mapping[str, str] | None = None) -> bool:
    """Whether text for `stream` is coloured."""
    environment = os.environ if env is None else env
    choice = _choice[0] if _choice else "auto"
    if choice != "auto":
        return choice == "always"
    if environment.get("NO_COLOR"):
        return False
    if environment.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    return isatty(stream) and environment.get("TERM") != "dumb"


def paint(text: str, colour: str | None) -> str:
    return f"{colour}{text}{RESET}" if colour and text else text
