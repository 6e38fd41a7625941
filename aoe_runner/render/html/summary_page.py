"""The summary page (`report --format html`): totals, speed-up distributions, where the time was saved, every entry.

Built from the summary's plain data (report.api.Loaded.data, what `--format json` writes), not the pydantic model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aoe_runner.render.html.charts import COLORS, Chart, histogram, histogram_chart, horizontal_line, layout
from aoe_runner.render.html.escape import HOVER_LIMIT, HOVER_TAIL, cell, label
from aoe_runner.render.html.page import Column, Page, Table, left_out_note
from aoe_runner.render.numbers import figure, finite, quantity
from aoe_runner.report.summary_data import operator_label

TOP_OPERATORS = 20
TOP_TYPES = 25
LABEL_LIMIT = 60  # characters of a name on an axis; hover shows it whole
TICK_LIMIT = 24  # characters of a tilted category label under a chart (op types, tunings): hover shows it whole
COLUMNS = [
    Column("kind"), Column("name", "long"), Column("op types", "long"), Column("mode"), Column("unit"),
    Column("before", "number"), Column("after", "number"), Column("speed-up", "number"), Column("time saved", "number"),
    Column("update"),
    Column("source file", "long"), Column("report", "long"),
]  # fmt: skip


def summary_page(data: dict[str, Any], top: int) -> Page:
    operators, subgraphs = data["operators"], data["subgraphs"]
    threshold = 1 + data["min_gain_pct"] / 100
    charts = [
        *_distribution("Speed-up of operators (before / after)", operators, "operators", COLORS["neutral"]),
        *_distribution("Speed-up of subgraphs (before / after)", subgraphs, "subgraphs", COLORS["good"]),
        *_top_operators(operators),
        *_op_types(operators, threshold, data["min_gain_pct"]),
        *_model_times(data["model_times"]),
    ]
    page = Page("aoe-runner report", facts=_facts(data["totals"]), charts=charts, table=_table(operators, subgraphs, top))
    legacy = data.get("legacy")
    if legacy is not None:
        page.notes.append(f"{legacy.operators:,} legacy Auto Tune entries (time unit unknown) are not drawn: see --format table")
    return page


def _facts(t: dict[str, Any]) -> list[tuple[str, str]]:
    facts = [
        ("files", f"{t['files']:,} ({t['partial_files']:,} partial)"),
        ("reports", f"{t['reports']:,} ({t['failed_reports']:,} failed)"),
        ("operators", f"{t['operators']:,}: {t['operators_added']:,} added, {t['operators_updated']:,} updated"),
        ("operator time saved", f"{figure(t['operator_time_saved_us'], 1)} µs"),
        ("median operator speed-up", _times(t["median_operator_speedup"])),
        ("subgraphs", f"{t['subgraphs']:,}: {t['subgraphs_added']:,} added, {t['subgraphs_updated']:,} updated"),
        ("subgraph time saved", f"{figure(t['subgraph_time_saved_ms'], 3)} ms"),
        ("median subgraph speed-up", _times(t["median_subgraph_speedup"])),
        ("tuning time", f"{figure(t['tuning_time_s'], 0)} s"),
    ]
    if t["opat_hit_rate"] is not None:
        facts.append(("OPAT bank hit rate", f"{t['opat_hit_rate']:.1%}"))
    return facts


def _times(speedup: float | None) -> str:
    return "none" if speedup is None else f"{figure(speedup, 3)}x"


def _distribution(title: str, entries: list[dict[str, Any]], noun: str, color: str) -> list[Chart]:
    bins = histogram([e["speedup"] for e in entries if finite(e["speedup"]) is not None])
    return [histogram_chart(title, bins, "speed-up (x)", noun, color)] if bins.counts else []


def _top_operators(operators: list[dict[str, Any]]) -> list[Chart]:
    top = [e for e in operators[:TOP_OPERATORS] if e["time_saved_us"] > 0][::-1]  # largest at the top of the chart
    if not top:
        return []
    ticks = [f"{len(top) - rank}. {label(operator_label(e), LABEL_LIMIT)}" for rank, e in enumerate(top)]  # unique when cut
    names = [label(operator_label(e), HOVER_LIMIT, HOVER_TAIL) for e in top]
    hover = [
        f"{name}<br>saved {figure(e['time_saved_us'], 2)} µs, speed-up {_times(e['speedup'])}"
        for name, e in zip(names, top, strict=True)
    ]
    trace = {"type": "bar", "orientation": "h", "y": ticks, "x": [e["time_saved_us"] for e in top], "hovertext": hover,
             "hoverinfo": "text", "marker": {"color": COLORS["good"]}, "name": "time saved"}  # fmt: skip
    chart_layout = layout("time saved (µs)", "", yaxis={"type": "category", "tickfont": {"size": 10}})
    chart_layout["height"] = 380
    return [Chart(f"Top {len(top)} operators by time saved", [trace], chart_layout, narrow_hides="yaxis")]


def _op_types(operators: list[dict[str, Any]], threshold: float, min_gain_pct: float) -> list[Chart]:
    groups: dict[str, list[float]] = {}  # op type: [saved with a real gain, saved without, entries without, entries]
    speedups: dict[str, list[float]] = {}
    for e in operators:
        key = "+".join(e["op_types"]) or "(none)"
        group = groups.setdefault(key, [0.0, 0.0, 0, 0])
        gained = e["speedup"] is None or e["speedup"] >= threshold
        group[0 if gained else 1] += e["time_saved_us"]
        group[2] += not gained
        group[3] += 1
        if finite(e["speedup"]) is not None:
            speedups.setdefault(key, []).append(e["speedup"])
    if not groups:
        return []
    ranked = sorted(groups, key=lambda key: (-(groups[key][0] + groups[key][1]), key))[:TOP_TYPES]
    names, whole = _short_categories(ranked), [label(key, HOVER_LIMIT, HOVER_TAIL) for key in ranked]
    saved = _bars(names, whole, ranked, groups, lambda g: g[0], "real gain", COLORS["good"])
    no_gain = _bars(names, whole, ranked, groups, lambda g: g[1], f"no real gain (< {min_gain_pct:g}%)", COLORS["warn"])
    saved_layout = layout("op type", "time saved (µs)", barmode="relative", xaxis={"type": "category", "tickangle": -40})
    medians = [_median(speedups.get(key, [])) for key in ranked]
    colors = [COLORS["warn"] if m is not None and m < threshold else COLORS["neutral"] for m in medians]
    hover = [
        f"{name}: median speed-up {_times(m)} over {groups[key][3]:,} entries, {int(groups[key][2]):,} with no real gain"
        for name, key, m in zip(whole, ranked, medians, strict=True)
    ]
    median_trace = {"type": "bar", "x": names, "y": medians, "marker": {"color": colors}, "hovertext": hover,
                    "hoverinfo": "text", "name": "median speed-up"}  # fmt: skip
    median_layout = layout("op type", "median speed-up (x)", xaxis={"type": "category", "tickangle": -40})
    median_layout["shapes"] = [horizontal_line(threshold, COLORS["warn"])]
    return [
        Chart(f"Time saved per op type (top {len(ranked)})", [saved, no_gain], saved_layout),
        Chart(
            f"Median speed-up per op type; below the dashed line ({min_gain_pct:g}%) is no real gain",
            [median_trace],
            median_layout,
        ),
    ]


def _bars(names: list[str], whole: list[str], keys: list[str], groups: dict[str, list[float]],
          part: Callable[[list[float]], float], name: str, color: str) -> dict[str, Any]:  # fmt: skip
    values = [part(groups[key]) for key in keys]
    hover = [f"{shown}: {figure(value, 2)} µs saved ({name})" for shown, value in zip(whole, values, strict=True)]
    return {"type": "bar", "x": names, "y": values, "name": name, "marker": {"color": color}, "hovertext": hover,
            "hoverinfo": "text"}  # fmt: skip


def _model_times(points: list[dict[str, Any]]) -> list[Chart]:
    if not points:
        return []
    raw = [f"{p['section']} {p['tuning_name'] or ''} #{index + 1}".replace("  ", " ") for index, p in enumerate(points)]
    names, whole = _short_categories(raw), [label(name, HOVER_LIMIT, HOVER_TAIL) for name in raw]
    traces = [
        {"type": "bar", "x": names, "y": [p[key] for p in points], "name": word, "marker": {"color": color},
         "hovertext": [f"{name}: {quantity(p[key], 3, 'ms')} {word}" for name, p in zip(whole, points, strict=True)],
         "hoverinfo": "text"}
        for key, word, color in (("before_ms", "before", COLORS["muted"]), ("after_ms", "after", COLORS["good"]))
    ]  # fmt: skip
    chart_layout = layout("tuning", "model time (ms)", barmode="group", xaxis={"type": "category"})
    return [Chart("Model time before and after tuning", traces, chart_layout)]


def _short_categories(names: list[str]) -> list[str]:
    """Category values (plotly labels) cut to TICK_LIMIT characters, start and end kept ("… #1" and "… #2" differ), and
    made distinct again where cutting joined two: a long fused op type or tuning name would otherwise take a chart's
    height from its bars. The values themselves are short (not tick texts over whole values), so plotly still leaves
    out the labels that do not fit a phone; hover labels hold the whole names."""
    short: list[str] = []
    taken: set[str] = set()
    for name in names:
        cut = candidate = label(name, TICK_LIMIT, tail=6)
        number = 1
        while candidate in taken:
            number += 1
            candidate = f"{cut} ({number})"
        short.append(candidate)
        taken.add(candidate)
    return short


def _table(operators: list[dict[str, Any]], subgraphs: list[dict[str, Any]], top: int) -> Table:
    rows = [
        ["operator", cell(e["name"]), cell("+".join(e["op_types"])), cell(e["tuning_mode"]), "µs", finite(e["before_us"]),
         finite(e["after_us"]), finite(e["speedup"]), finite(e["time_saved_us"]), e["update_mode"],
         cell(e["source"]["file"]), cell(e["source"]["report_key"])]
        for e in operators[:top]
    ] + [
        ["subgraph", cell(e["repo_key"]), "", None, "ms", finite(e["before_ms"]), finite(e["after_ms"]), finite(e["speedup"]),
         finite(e["time_saved_ms"]), e["update_mode"], cell(e["source"]["file"]), cell(e["source"]["report_key"])]
        for e in subgraphs[:top]
    ]  # fmt: skip
    notes = [left_out_note(min(top, len(operators)), len(operators), "operators", top),
             left_out_note(min(top, len(subgraphs)), len(subgraphs), "subgraphs", top)]  # fmt: skip
    return Table("Every entry, by time saved", COLUMNS, rows, "; ".join(note for note in notes if note))


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
