"""A campaign's page (`campaign status ID --format html -o FILE`): its jobs over time, one row per host and device,
each attempt a bar coloured by how the job ended; hovering a bar names the job, its run and how long it took; the
table lists every job as `campaign status` does."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from aoe_runner.render.html.charts import COLORS, Chart, layout
from aoe_runner.render.html.escape import cell, label
from aoe_runner.render.html.page import Column, Page, Table

if TYPE_CHECKING:
    from aoe_runner.campaign.record import CampaignRecord

STATE_COLORS = {"succeeded": COLORS["good"], "failed": COLORS["bad"], "lost": COLORS["bad"],
                "stopped": COLORS["warn"], "running": COLORS["neutral"]}  # fmt: skip
COLUMNS = [Column("job", "long"), Column("state"), Column("attempts", "number"), Column("host", "long"), Column("device"),
           Column("run"), Column("started (UTC)"), Column("took s", "number"), Column("why", "long")]  # fmt: skip


def campaign_page(record: CampaignRecord) -> Page:
    counts = record.counts()
    facts = [("campaign", record.id), ("name", record.name), ("state", record.state), ("jobs", f"{len(record.jobs):,}")]
    facts += [(state, f"{number:,}") for state, number in sorted(counts.items())]
    bars = _bars(record)
    charts = [_timeline(bars)] if bars else []
    notes = [] if bars else ["No job of this campaign has started."]
    rows = [_row(job) for job in record.jobs]
    return Page(f"aoe-runner campaign {record.name}", facts=facts, charts=charts, table=Table("Jobs", COLUMNS, rows), notes=notes)


def _bars(record: CampaignRecord) -> list[dict[str, Any]]:
    now = datetime.now(timezone.utc)
    found = []
    for job in record.jobs:
        for attempt in job.attempts:
            if attempt.started_at is None:
                continue
            ended = attempt.ended_at or now
            state = job.state.value if attempt is job.attempts[-1] else "lost"
            found.append({
                "lane": f"{attempt.host or '?'} / device {attempt.device or '?'}",
                "start": attempt.started_at.astimezone(timezone.utc).replace(tzinfo=None),
                "seconds": max((ended - attempt.started_at).total_seconds(), 0.001),
                "state": state, "job": job.name, "run": attempt.run or "",
            })  # fmt: skip
    return found


def _timeline(bars: list[dict[str, Any]]) -> Chart:
    traces = []
    for state in sorted({bar["state"] for bar in bars}):
        mine = [bar for bar in bars if bar["state"] == state]
        traces.append({
            "type": "bar", "orientation": "h", "name": state,
            "y": [cell(bar["lane"]) for bar in mine],
            "x": [bar["seconds"] * 1000 for bar in mine],  # plotly's date axis counts milliseconds
            "base": [bar["start"].isoformat() for bar in mine],
            "marker": {"color": STATE_COLORS.get(state, COLORS["muted"])},
            "hovertext": [_hover(bar, state) for bar in mine],
            "hoverinfo": "text", "customdata": [cell(bar["run"]) for bar in mine],
        })  # fmt: skip
    chart_layout = layout("time (UTC)", "host / device", barmode="overlay")
    chart_layout["xaxis"]["type"] = "date"
    chart_layout["yaxis"]["rangemode"] = "normal"
    return Chart("Jobs over time, per host and device", traces, chart_layout, run_links=True, narrow_hides="yaxis")


def _hover(bar: dict[str, Any], state: str) -> str:
    return f"{label(bar['job'])}: {state}, run {label(bar['run']) or '-'}, {bar['seconds']:.0f} s"


def _row(job: Any) -> list[Any]:
    last = job.attempts[-1] if job.attempts else None
    took = (last.ended_at - last.started_at).total_seconds() if last and last.started_at and last.ended_at else None
    started = f"{last.started_at.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S}" if last and last.started_at else ""
    return [job.name, job.state.value, len(job.attempts), last.host if last else "", last.device if last else "",
            job.run or "", started, took, job.why or ""]  # fmt: skip
