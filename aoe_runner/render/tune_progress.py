"""What `aoe-runner tune` says while the script runs: a live status line on a terminal, plain lines otherwise."""

from __future__ import annotations

import time

from aoe_runner.common import colour
from aoe_runner.common.quantities import format_duration
from aoe_runner.common.terminal import Terminal, write
from aoe_runner.preflight.checks import Status
from aoe_runner.preflight.report import PreflightReport
from aoe_runner.runs.manifest import MarkerSeen, Progress

PLAIN_INTERVAL_S = 30.0
_MARKER_TEXT = {
    "tuning_on": "AOE tuning is on",
    "operator_finished": "AOE finished tuning an operator",
    "tuning_finished": "AOE tuning finished",
}


class TerminalReporter:
    """Everything goes to stderr, so the script's stdout stays its own."""

    def __init__(self, terminal: Terminal, live: bool) -> None:
        self.terminal = terminal
        self.live = live
        self._line_shown = False
        self._last_plain = 0.0
        self._latest: Progress | None = None
        self._printed: Progress | None = None
        self._alive = ""  # how long the run has run, and since its last result file

    def notice(self, message: str) -> None:
        self.clear()
        self.terminal.info(f"aoe-runner: {message}")

    def preflight(self, report: PreflightReport, forced: bool) -> None:
        """What needs action when the run stops here or goes on with --skip; one line per problem when --force runs
        past failures. -v shows every check, and where each number came from, in each case."""
        self.clear()
        problems = [check for check in report.checks if check.status in (Status.FAIL, Status.WARN)]
        forcing = forced and any(check.status is Status.FAIL for check in problems)
        err = self.terminal.err
        if self.terminal.verbose or not forcing:
            from aoe_runner.render.preflight_table import render_preflight, render_preflight_short

            shown = render_preflight if self.terminal.verbose else render_preflight_short
            write(err, shown(report, self.terminal.width(stream=err), colour=colour.wanted(err)))
        else:
            for check in problems:
                label = "failed" if check.status is Status.FAIL else "warning"
                self.terminal.warning(f"preflight {label}: {check.title}: {check.observed}; needs {check.required}")
        if forcing:
            self.terminal.warning("running anyway because of --force")

    def marker(self, marker: MarkerSeen) -> None:
        self.notice(f"{_MARKER_TEXT.get(marker.kind, marker.kind)}: {marker.first_line}")

    def progress(self, progress: Progress) -> None:
        self._latest = progress
        if self.live:
            self._show_live()
        elif time.monotonic() - self._last_plain >= PLAIN_INTERVAL_S:
            self._print_plain()

    def alive(self, elapsed_s: float, since_result_s: float | None) -> None:
        """A run of hours says it is alive: how long it has run, and since its last result file."""
        last = "no result file yet" if since_result_s is None else f"last result {format_duration(round(since_result_s))} ago"
        self._alive = f"running {format_duration(round(elapsed_s))}, {last}"
        if self.live:
            self._show_live()
        elif elapsed_s >= PLAIN_INTERVAL_S and time.monotonic() - self._last_plain >= PLAIN_INTERVAL_S:
            self._print_plain()

    def _show_live(self) -> None:
        self.clear()
        self._live_write(f"aoe-runner: {self._status()}")
        self._line_shown = True

    def _status(self) -> str:
        return "; ".join(part for part in (self._alive, self._latest.describe() if self._latest else "") if part)

    def finish(self) -> None:
        """The last counts, if the plain lines have not said them yet (how long it ran, the final line says)."""
        if self._latest is not None and self._latest != self._printed:
            self._alive = ""
            self._print_plain()

    def clear(self) -> None:
        if self._line_shown:
            self._live_write("\r\x1b[K")
            self._line_shown = False

    def _live_write(self, text: str) -> None:
        err = self.terminal.err
        if err is not None:  # live only on a terminal, but a closed stderr is None
            err.write(text)
            err.flush()

    def _print_plain(self) -> None:
        self.clear()
        self.terminal.info(f"aoe-runner: {self._status()}")
        self._printed = self._latest
        self._last_plain = time.monotonic()
