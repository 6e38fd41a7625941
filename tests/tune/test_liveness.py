"""A run of hours shows it is alive: how long it has run and since its last result file, live on a terminal and
every half minute in a log; AOE's first marker gets its own line."""

from __future__ import annotations

import io
import re

import pytest

from aoe_runner.common.terminal import Terminal
from aoe_runner.render.tune_progress import PLAIN_INTERVAL_S, TerminalReporter
from aoe_runner.runs.manifest import Progress
from tests.tune.runner import Home, on_a_terminal, tune_command


def _on_a_terminal(home: Home, *script_args: str) -> bytes:
    code, seen = on_a_terminal(tune_command(*script_args), home.env, home.root)
    assert code == 0, seen
    return seen


@pytest.mark.slow  # seconds of a real run on a pseudo-terminal; the reporter's own tests below stay in the fast set
def test_a_terminal_sees_how_long_the_run_has_run_before_any_result(tmp_path) -> None:  # type: ignore[no-untyped-def]
    seen = _on_a_terminal(Home(tmp_path), "sleep", "2.5")
    assert re.search(rb"aoe-runner: running \d+s, no result file yet", seen), seen


@pytest.mark.slow  # seconds of a real run on a pseudo-terminal
def test_a_terminal_sees_how_long_ago_the_last_result_came_and_the_first_marker(tmp_path) -> None:  # type: ignore[no-untyped-def]
    seen = _on_a_terminal(Home(tmp_path), "progress", "--reports", "3", "--interval", "1.2")
    assert re.search(rb"aoe-runner: running \d+s, last result \d+s ago; \d reports?, operators", seen), seen
    assert b"aoe-runner: AOE tuning is on: " in seen


def test_a_log_gets_a_line_every_half_minute_and_none_before() -> None:
    err = io.StringIO()
    reporter = TerminalReporter(Terminal(out=io.StringIO(), err=err), live=False)
    reporter.alive(PLAIN_INTERVAL_S - 1, None)
    assert err.getvalue() == ""  # a short run is not interrupted
    reporter.alive(PLAIN_INTERVAL_S + 1, None)
    assert err.getvalue() == f"aoe-runner: running {int(PLAIN_INTERVAL_S + 1)}s, no result file yet\n"
    reporter.progress(Progress(reports=2))
    reporter.alive(95, 40)  # within the half minute of the last line: nothing more yet
    assert err.getvalue().count("\n") == 1


def test_a_log_line_says_since_when_the_results_stopped() -> None:
    err = io.StringIO()
    reporter = TerminalReporter(Terminal(out=io.StringIO(), err=err), live=False)
    reporter._latest = Progress(reports=2)
    reporter.alive(4320, 240)
    assert err.getvalue().startswith("aoe-runner: running 1h12m, last result 4m ago; 2 reports, ")
