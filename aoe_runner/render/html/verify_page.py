"""The verify page (`verify --format html`): each run's step times per arm in run order, the speed-up with its
interval against the threshold, the verdict and the gates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aoe_runner.render.html.charts import COLORS, Chart, layout, vertical_line
from aoe_runner.render.html.escape import cell, label
from aoe_runner.render.html.page import Column, Page, Table
from aoe_runner.render.numbers import figure
from aoe_runner.verify.stats import quantile

if TYPE_CHECKING:
    from aoe_runner.verify.report import VerifyReport
    from aoe_runner.verify.stats import Comparison

ARM_COLORS = {"baseline": COLORS["muted"], "tuned": COLORS["neutral"]}
VERDICT_CLASS = {"faster": "good", "slower": "bad"}
STATISTICS = {"median": "median", "mean": "mean", "p95": "P95", "p99": "P99"}
COLUMNS = [
    Column("run", "long"), Column("arm"), Column("repeat", "number"), Column("steps", "number"),
    Column("warm-up dropped", "number"), Column("median ms", "number"), Column("mean ms", "number"),
    Column("P95 ms", "number"), Column("P99 ms", "number"), Column("log", "long"),
]  # fmt: skip


def verify_page(report: VerifyReport, step_times_ms: list[list[float]] | None) -> Page:
    c = report.comparison
    verdict = (VERDICT_CLASS.get(c.verdict.value, "neutral"), f"verdict: {c.verdict.value} ({c.explanation})")
    facts = [
        ("speed-up (baseline / tuned)", f"{figure(c.speedup, 3)}x"),
        (f"{c.confidence:.0%} interval", f"{figure(c.ci_low, 3)}x to {figure(c.ci_high, 3)}x"),
        ("threshold", f"{c.threshold_pct:g}% slower"),
        ("runs per arm", f"{report.repeats} (interleaved)"),
        ("baseline median", f"{figure(c.baseline.median_ms, 3)} ms"),
        ("tuned median", f"{figure(c.tuned.median_ms, 3)} ms"),
    ]
    facts += [
        (f"gate {g.gate} ({STATISTICS[g.statistic]})", f"{'pass' if g.passed else 'FAIL'}: {g.explanation}") for g in report.gates
    ]
    rows = [
        [cell(r.run), r.arm, r.repeat, r.steps_printed, r.warmup_dropped, r.median_ms, r.mean_ms, r.p95_ms, r.p99_ms, cell(r.log)]
        for r in report.runs
    ]
    return Page(
        f"aoe-runner verify {report.verification}",
        facts=facts,
        warnings=list(report.warnings),
        verdict=verdict,
        charts=[_step_times(report, step_times_ms), _speedups(c)],
        table=Table("Runs, in the order they ran", COLUMNS, rows),
        notes=[f"script {report.script}; bank {report.bank}; step times from {report.step_format}; warm-up {report.warmup}"],
    )


def _step_times(report: VerifyReport, step_times_ms: list[list[float]] | None) -> Chart:
    """One box per run (quartiles and whiskers computed here, so the page does not carry every step time)."""
    order = [label(f"{index + 1}. {r.arm} {r.repeat}") for index, r in enumerate(report.runs)]
    traces = []
    for arm, color in ARM_COLORS.items():
        picked = [(name, r, i) for i, (name, r) in enumerate(zip(order, report.runs, strict=True)) if r.arm == arm]
        if step_times_ms is not None and len(step_times_ms) == len(report.runs):
            boxes = [_box(sorted(step_times_ms[i])) for _, _, i in picked]
        else:  # no step times kept: each run's own figures stand in for its box
            boxes = [(r.median_ms, r.median_ms, r.p95_ms, r.median_ms, r.p99_ms) for _, r, _ in picked]
        traces.append(
            {"type": "box", "name": arm, "x": [name for name, _, _ in picked], "q1": [b[0] for b in boxes],
             "median": [b[1] for b in boxes], "q3": [b[2] for b in boxes], "lowerfence": [b[3] for b in boxes],
             "upperfence": [b[4] for b in boxes], "mean": [r.mean_ms for _, r, _ in picked],
             "marker": {"color": color}, "line": {"color": color}, "boxmean": True}
        )  # fmt: skip
    runs_axis = {"type": "category", "categoryorder": "array", "categoryarray": order, "tickangle": -30}
    chart_layout = layout(
        "run, in run order", "step time (ms)", xaxis=runs_axis, yaxis={"rangemode": "normal"}, boxmode="overlay"
    )
    return Chart("Step times of each run after warm-up (box: quartiles; whiskers: 1.5 IQR; dashed: mean)", traces, chart_layout)


def _box(times: list[float]) -> tuple[float, float, float, float, float]:
    q1, median, q3 = quantile(times, 0.25), quantile(times, 0.5), quantile(times, 0.75)
    reach = 1.5 * (q3 - q1)
    low = next(value for value in times if value >= q1 - reach)
    high = next(value for value in reversed(times) if value <= q3 + reach)
    return q1, median, q3, low, high


def _speedups(c: Comparison) -> Chart:
    names = [STATISTICS[change.statistic] for change in c.changes]
    trace: dict[str, Any] = {
        "type": "scatter", "mode": "markers", "name": "speed-up", "y": names, "x": [ch.speedup for ch in c.changes],
        "error_x": {"type": "data", "symmetric": False, "array": [ch.ci_high - ch.speedup for ch in c.changes],
                    "arrayminus": [ch.speedup - ch.ci_low for ch in c.changes]},
        "marker": {"size": 11, "color": COLORS["neutral"]},
        "hovertemplate": "%{y}: %{x:.3f}x<extra></extra>",
    }  # fmt: skip
    slower = 1 / (1 + c.threshold_pct / 100)
    chart_layout = layout("speed-up, baseline / tuned (x)", "", yaxis={"type": "category", "autorange": "reversed"})
    chart_layout["shapes"] = [vertical_line(1.0, COLORS["muted"], "solid"), vertical_line(slower, COLORS["bad"])]
    title = f"Speed-up with its {c.confidence:.0%} interval; solid: no change; dashed: {c.threshold_pct:g}% slower"
    return Chart(title, [trace], chart_layout)
