"""The diff page (`report --diff --format html`): change counts, old against new time per entry, regressions first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aoe_runner.render.html.charts import COLORS, Chart, layout
from aoe_runner.render.html.escape import HOVER_LIMIT, HOVER_TAIL, cell, label
from aoe_runner.render.html.page import Column, Page, Table, left_out_note
from aoe_runner.render.numbers import finite

if TYPE_CHECKING:
    from aoe_runner.report.diff import BankDiff, EntryChange

POINTS_PER_KIND = 5000  # per change kind and chart: the most changed first (the diff's own order)
KIND_COLORS = {"regressed": COLORS["bad"], "improved": COLORS["good"], "added": COLORS["neutral"], "unchanged": COLORS["muted"]}
UNIT_WORDS = {"us": "µs", "ms": "ms", "unknown": "unknown unit"}
COLUMNS = [
    Column("change"), Column("kind"), Column("entry", "long"), Column("unit"), Column("old before", "number"),
    Column("old after", "number"), Column("new before", "number"), Column("new after", "number"),
    Column("after change %", "number"),
]  # fmt: skip


def diff_page(diff: BankDiff, top: int, drift: list[str]) -> Page:
    counts = {kind.value: count for kind, count in diff.counts.items()}
    facts = [(kind.words, f"{diff.counts[kind]:,}") for kind in diff.counts]
    facts += [
        ("threshold", f"±{diff.threshold_pct:g}%"),
        ("old: files, entries", f"{diff.old.files:,}, {diff.old.operators + diff.old.subgraphs:,}"),
        ("new: files, entries", f"{diff.new.files:,}, {diff.new.operators + diff.new.subgraphs:,}"),
    ]
    warnings = [f"comparing across environments: {difference}" for difference in drift]
    regressed = counts.get("regressed", 0)
    entries = "entry" if regressed == 1 else "entries"
    verdict = ("bad", f"{regressed:,} {entries} regressed beyond {diff.threshold_pct:g}%") if regressed else None
    charts = [chart for kind, unit in (("operator", "us"), ("subgraph", "ms")) for chart in _scatter(diff, kind, unit)]
    shown = diff.changes[:top]
    rows = [_row(change) for change in shown]
    note = left_out_note(len(shown), len(diff.changes), "changed or unchanged entries", top)
    table = Table("Every entry, regressions first", COLUMNS, rows, note)
    return Page("aoe-runner results diff", facts=facts, warnings=warnings, verdict=verdict, charts=charts, table=table)


def _scatter(diff: BankDiff, kind: str, unit: str) -> list[Chart]:
    entries = [c for c in diff.changes if c.kind == kind]
    if not entries:
        return []
    words = UNIT_WORDS[unit]
    traces, left_out, low, high = [], 0, float("inf"), 0.0
    for change_kind, color in KIND_COLORS.items():
        points = [p for p in (_point(c) for c in entries if c.change.value == change_kind) if p is not None]
        left_out += max(len(points) - POINTS_PER_KIND, 0)
        points = points[:POINTS_PER_KIND]
        if not points:
            continue
        low = min(low, *(min(x, y) for x, y, _ in points))
        high = max(high, *(max(x, y) for x, y, _ in points))
        name = "added (x: its time before tuning)" if change_kind == "added" else change_kind
        traces.append(
            {"type": "scatter", "mode": "markers", "name": name, "x": [p[0] for p in points], "y": [p[1] for p in points],
             "text": [p[2] for p in points], "marker": {"color": color, "size": 6, "opacity": 0.75},
             "hovertemplate": "%{text}<br>old %{x:,.4g} " + words + ", new %{y:,.4g} " + words + "<extra>" + name + "</extra>"}
        )  # fmt: skip
    if not traces:
        return []
    traces.insert(0, _band(low, high, diff.threshold_pct))
    axis = {"type": "log"}
    chart_layout = layout(f"old after ({words})", f"new after ({words})", xaxis=axis, yaxis=axis)
    title = f"{kind.capitalize()}s: old against new time, ±{diff.threshold_pct:g}% band"
    if left_out:
        title += f" ({left_out:,} points beyond {POINTS_PER_KIND:,} per kind left out)"
    return [Chart(title, traces, chart_layout)]


def _point(change: EntryChange) -> tuple[float, float, str] | None:
    old = change.new_before if change.change.value == "added" else change.old_after
    new = change.new_after
    old, new = finite(old), finite(new)
    if old is None or new is None or old <= 0 or new <= 0:  # log axes: nothing at or below zero
        return None
    return old, new, label(change.label, HOVER_LIMIT, HOVER_TAIL)  # up to 20,000 points a chart: their labels are bounded


def _band(low: float, high: float, threshold_pct: float) -> dict[str, Any]:
    """The region where a change counts as unchanged, as one closed polygon around y = x."""
    factor = threshold_pct / 100
    low, high = low / 1.5, high * 1.5
    return {"type": "scatter", "mode": "lines", "name": f"unchanged band (±{threshold_pct:g}%)", "hoverinfo": "skip",
            "x": [low, high, high, low, low], "y": [low * (1 + factor), high * (1 + factor), high * (1 - factor),
            low * (1 - factor), low * (1 + factor)], "fill": "toself", "fillcolor": "rgba(140,149,159,0.18)",
            "line": {"color": "rgba(140,149,159,0.6)", "width": 1}}  # fmt: skip


def _row(c: EntryChange) -> list[Any]:
    return [c.change.value, c.kind, cell(c.label), UNIT_WORDS[c.unit], finite(c.old_before), finite(c.old_after),
            finite(c.new_before), finite(c.new_after), finite(c.after_change_pct)]  # fmt: skip
