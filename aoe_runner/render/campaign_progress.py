"""`campaign run` on a terminal: one line per event, and on a terminal a status line under them, redrawn each
second: how many jobs are pending, running, done and failed, and each running job's host, device, time so far and
last result file. Names come from users: the line goes through visible(), and is cut to the terminal's width."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from aoe_runner.common.safe_text import visible

if TYPE_CHECKING:
    from aoe_runner.campaign.record import CampaignRecord
    from aoe_runner.common.terminal import Terminal


class CampaignView:
    def __init__(self, terminal: Terminal, live: bool) -> None:
        self.terminal = terminal
        self.live = live
        self._shown = False

    def say(self, message: str) -> None:
        self.clear()
        self.terminal.info(message)

    def status(self, record: CampaignRecord) -> None:
        if not self.live:
            return
        self.clear()
        width = self.terminal.width(stream=self.terminal.err) or 200
        self._write(visible(status_line(record))[: max(width - 1, 20)])  # one line: a wrapped one could not be redrawn
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            self._write("\r\x1b[K")
            self._shown = False

    def _write(self, text: str) -> None:
        err = self.terminal.err
        if err is not None:
            err.write(text)
            err.flush()


def status_line(record: CampaignRecord) -> str:
    counts = record.counts()
    done = counts.get("succeeded", 0) + counts.get("skipped", 0)
    failed = sum(counts.get(state, 0) for state in ("failed", "lost", "stopped"))
    head = f"{counts.get('pending', 0)} pending, {counts.get('running', 0)} running, {done} done, {failed} failed"
    now = datetime.now(timezone.utc)
    running = []
    for job in record.jobs:
        if job.state.value != "running" or not job.attempts or job.attempts[-1].started_at is None:
            continue
        attempt = job.attempts[-1]
        seconds = (now - attempt.started_at).total_seconds() if attempt.started_at else 0.0
        last = f", {attempt.last_result_file}" if attempt.last_result_file else ""
        running.append(f"{job.name} on {attempt.host} device {attempt.device or '?'} {seconds:.0f}s{last}")
    return "; ".join([head, *running])
