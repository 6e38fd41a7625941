"""The history page (`runs report --format html`): per tuning run, over time, the time saved, the entries added
and updated, the bank's size and the status; hovering or clicking a run shows the `runs show` line for it."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from aoe_runner.render.html.charts import COLORS, Chart, layout
from aoe_runner.render.html.escape import cell, label
from aoe_runner.render.html.page import Column, Page, Table
from aoe_runner.render.numbers import quantity

if TYPE_CHECKING:
    from aoe_runner.runs.savings import HistoryRun

UNREAD_NAMED = 10  # runs named in the warning about result files that could not be read
SIZE_UNITS = ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "bytes"))
STATUS_COLORS = {"succeeded": COLORS["good"], "failed": COLORS["bad"], "timed_out": COLORS["bad"],
                 "interrupted": COLORS["warn"], "abandoned": COLORS["warn"], "running": COLORS["neutral"]}  # fmt: skip
COLUMNS = [
    Column("run"), Column("started (UTC)"), Column("status"), Column("mode"), Column("script", "long"),
    Column("operators added", "number"), Column("operators updated", "number"), Column("subgraphs added", "number"),
    Column("subgraphs updated", "number"),
    Column("operator time saved µs", "number"), Column("subgraph time saved ms", "number"), Column("bank MiB", "number"),
    Column("result files", "number"),
]  # fmt: skip


def history_page(runs: list[HistoryRun], script: str | None) -> Page:
    title = f"aoe-runner run history of {script}" if script else "aoe-runner run history"
    statuses: dict[str, int] = {}
    for run in runs:
        statuses[run.manifest.status.value] = statuses.get(run.manifest.status.value, 0) + 1
    facts = [("tuning runs", f"{len(runs):,}")] + [(status, f"{count:,}") for status, count in sorted(statuses.items())]
    if runs:
        facts.append(("from", f"{_utc(runs[0]):%Y-%m-%d %H:%M} UTC"))
        facts.append(("to", f"{_utc(runs[-1]):%Y-%m-%d %H:%M} UTC"))
    charts = [_time_saved(runs), _entries(runs), _bank(runs)] if runs else []
    notes = [] if runs else ["No tuning runs are recorded" + (f" for {script}" if script else "") + "."]
    unread = [r.manifest.id for r in runs if r.unread]
    warnings = [
        f"{len(unread):,} run(s) recorded result files that are not here (removed, or on another host): "
        f"their time saved is unknown or partial: {', '.join(unread[:UNREAD_NAMED])}"
        + (f" and {len(unread) - UNREAD_NAMED:,} more" if len(unread) > UNREAD_NAMED else "")
    ] if unread else []  # fmt: skip
    broken = [(r.manifest.id, error) for r in runs for error in r.broken]
    warnings += [f"run {run_id}: {error.message}; its time saved leaves this file out" for run_id, error in broken[:UNREAD_NAMED]]
    if len(broken) > UNREAD_NAMED:
        warnings.append(f"and {len(broken) - UNREAD_NAMED:,} more result files that cannot be read")
    table = Table("Runs, newest last", COLUMNS, [_row(r) for r in runs])
    return Page(title, facts=facts, warnings=warnings, charts=charts, table=table, notes=notes)


def _utc(run: HistoryRun) -> datetime:
    """The run's start in UTC: plotly drops a time zone offset, and a manifest may carry another host's (a manifest's
    times always have a zone: RunManifest reads a zoneless one as UTC)."""
    return run.manifest.started_at.astimezone(timezone.utc)


def _axis_data(runs: list[HistoryRun]) -> dict[str, Any]:
    return {"x": [_utc(r).replace(tzinfo=None).isoformat() for r in runs], "customdata": [cell(r.manifest.id) for r in runs]}


def _ids(runs: list[HistoryRun]) -> dict[str, Any]:
    """The run ids as hover labels (`%{text}`): escaped, since plotly reads tags in labels; customdata stays the id
    itself, which page.js sets as text. (On a bar, text would also be drawn on the bar: bars use hovertext.)"""
    return {"text": [label(r.manifest.id) for r in runs]}


def _time_saved(runs: list[HistoryRun]) -> Chart:
    colors = [STATUS_COLORS.get(r.manifest.status.value, COLORS["muted"]) for r in runs]
    saved = [r.operator_saved_us for r in runs]
    hover = [
        f"run {label(r.manifest.id)} ({r.manifest.status.value})<br>operator time saved: {quantity(s, 1, 'µs')}"
        for r, s in zip(runs, saved, strict=True)
    ]
    traces = [{"type": "bar", "name": "operator time saved", "y": saved, "marker": {"color": colors}, **_axis_data(runs),
               "hovertext": hover, "hoverinfo": "text"}]  # fmt: skip
    if any(r.subgraph_saved_ms for r in runs):
        subgraph_hover = [f"run {label(r.manifest.id)}: {quantity(r.subgraph_saved_ms, 3, 'ms')}" for r in runs]
        traces.append({"type": "scatter", "mode": "lines+markers", "name": "subgraph time saved (ms, right axis)",
                       "y": [r.subgraph_saved_ms for r in runs], "yaxis": "y2", **_axis_data(runs),
                       "hovertext": subgraph_hover, "hoverinfo": "text"})  # fmt: skip
    chart_layout = layout("run start (UTC)", "operator time saved (µs)", xaxis={"type": "date"})
    chart_layout["yaxis2"] = {"title": {"text": "subgraph time saved (ms)"}, "overlaying": "y", "side": "right"}
    return Chart("Time saved per run (bar colour: status)", traces, chart_layout, run_links=True)


def _entries(runs: list[HistoryRun]) -> Chart:
    series = (("operators_added", "operators added"), ("operators_updated", "operators updated"),
              ("subgraphs_added", "subgraphs added"), ("subgraphs_updated", "subgraphs updated"))  # fmt: skip
    traces = [
        {"type": "scatter", "mode": "lines+markers", "name": name, "y": [getattr(r.manifest.progress, key) for r in runs],
         **_axis_data(runs), **_ids(runs), "hovertemplate": "run %{text}: %{y:,} " + name + "<extra></extra>"}
        for key, name in series
    ]  # fmt: skip
    return Chart(
        "Entries added and updated per run", traces, layout("run start (UTC)", "entries (count)", xaxis={"type": "date"}), True
    )


def _bank(runs: list[HistoryRun]) -> Chart:
    largest = max((r.bank_bytes or 0 for r in runs), default=0)
    scale, unit = next((scale, unit) for scale, unit in SIZE_UNITS if largest >= scale or scale == 1)
    traces = []
    for status, color in STATUS_COLORS.items():
        picked = [r for r in runs if r.manifest.status.value == status]
        if picked:
            sizes = [None if r.bank_bytes is None else r.bank_bytes / scale for r in picked]
            traces.append(
                {"type": "scatter", "mode": "markers", "name": status, "y": sizes, **_axis_data(picked), **_ids(picked),
                 "marker": {"color": color, "size": 9},
                 "hovertemplate": "run %{text}: %{y:,.2f} " + unit + "<extra>" + status + "</extra>"}
            )  # fmt: skip
    chart_layout = layout("run start (UTC)", f"bank size ({unit})", xaxis={"type": "date"})
    return Chart("Bank size after each run, by status", traces, chart_layout, run_links=True)


def _row(r: HistoryRun) -> list[Any]:
    m = r.manifest
    p = m.progress
    return [cell(m.id), f"{_utc(r):%Y-%m-%d %H:%M:%S}", m.status.value, m.mode_label, cell(m.script), p.operators_added,
            p.operators_updated, p.subgraphs_added, p.subgraphs_updated, r.operator_saved_us, r.subgraph_saved_ms, r.bank_mib,
            len(m.result_files)]  # fmt: skip
