"""Chart building blocks as plotly figure specs (plain dicts): histograms binned here, so a page's size does not
grow with the number of entries, and the layout every chart shares (axis titles carry units)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aoe_runner.render.html.page import Chart

HISTOGRAM_BINS = 40
TAIL_QUANTILE = 0.99  # the last bin holds everything above this quantile, so one outlier does not flatten the rest
COLORS = {"good": "#1a7f37", "bad": "#cf222e", "neutral": "#0969da", "muted": "#8c959f", "warn": "#bf8700"}


@dataclass(frozen=True)
class Bins:
    """Equal-width bins from edges[0] to edges[-1]; the last one also counts every value above its upper edge."""

    edges: list[float]
    counts: list[int]
    overflow: int  # values above edges[-1], counted in the last bin

    @property
    def total(self) -> int:
        return sum(self.counts)


def histogram(values: Sequence[float], bins: int | None = None) -> Bins:
    """Bin finite values (by default in about sqrt(n) bins, 5 to 40); NaN and infinities are left out."""
    present = sorted(value for value in values if math.isfinite(value))
    if not present:
        return Bins([], [], 0)
    bins = bins or min(max(math.ceil(math.sqrt(len(present))), 5), HISTOGRAM_BINS)
    low = present[0]
    high = present[min(len(present) - 1, math.ceil(TAIL_QUANTILE * (len(present) - 1)))]
    width = high / bins - low / bins  # not (high - low) / bins, which can overflow
    if high <= low or width <= 0:  # nearly every value equal (or too close to tell apart): one bin
        return Bins([low, low], [len(present)], sum(1 for value in present if value > low))
    overflow = sum(1 for value in present if value > high)
    edges = [low * (1 - index / bins) + high * (index / bins) for index in range(bins)] + [high]  # never beyond high
    counts = [0] * bins
    for value in present:
        place = (value - low) / width  # inf for an outlier far above high
        counts[int(place) if place < bins else bins - 1] += 1
    return Bins(edges, counts, overflow)


def histogram_chart(title: str, bins: Bins, x_title: str, noun: str, color: str = COLORS["neutral"]) -> Chart:
    lefts, rights = bins.edges[:-1], bins.edges[1:]
    centers = [left / 2 + right / 2 for left, right in zip(lefts, rights, strict=True)]  # (left + right) can overflow
    widths = [right - left for left, right in zip(lefts, rights, strict=True)]
    last = len(bins.counts) - 1
    hover = [
        f"{left:.4g}x to {right:.4g}x{' and above' if index == last and bins.overflow else ''}: {count:,} {noun}"
        for index, (left, right, count) in enumerate(zip(lefts, rights, bins.counts, strict=True))
    ]
    if bins.edges and bins.edges[0] == bins.edges[-1]:  # every value equal: one bin of no width, drawn 10% wide
        widths = [max(abs(bins.edges[0]) * 0.1, 0.1)]
        hover = [f"{bins.edges[0]:.4g}x{' and above' if bins.overflow else ''}: {bins.counts[0]:,} {noun}"]
    trace = {"type": "bar", "x": centers, "y": bins.counts, "width": widths, "marker": {"color": color},
             "hovertext": hover, "hoverinfo": "text", "name": noun}  # fmt: skip
    return Chart(title, [trace], layout(x_title, f"{noun} (count)"))


def layout(x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    """The layout every chart shares: titled axes, a legend above, room for long tick labels."""
    base: dict[str, Any] = {
        "autosize": True,
        "margin": {"l": 60, "r": 16, "t": 24, "b": 56},
        "xaxis": {"title": {"text": x_title}, "automargin": True},
        "yaxis": {"title": {"text": y_title}, "automargin": True, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        "hovermode": "closest",
        "font": {"family": "system-ui, sans-serif", "size": 12},
    }
    for key, value in extra.items():
        base[key] = {**base[key], **value} if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return base


def vertical_line(x: float, color: str, dash: str = "dash") -> dict[str, Any]:
    return {"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
            "line": {"color": color, "dash": dash, "width": 1.5}}  # fmt: skip


def horizontal_line(y: float, color: str, dash: str = "dash") -> dict[str, Any]:
    return {"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": y, "y1": y,
            "line": {"color": color, "dash": dash, "width": 1.5}}  # fmt: skip
