"""The page shell: a Page (facts, warnings, charts, one table) written as one self-contained HTML file.

Text that came from users or result files is escaped here (escape.text) or carried as JSON and set as textContent
by page.js; the charts are plotly figure specs (plain dicts) that page.js draws with the inlined plotly.js.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from aoe_runner import __version__
from aoe_runner.common.terminal import Document
from aoe_runner.render.html.assets import own, plotly_js
from aoe_runner.render.html.escape import script_json, text

DEFAULT_TOP = 2000  # table rows per list: about 1 MB of rows, so the 200-file corpus stays well under 10 MB


@dataclass(frozen=True)
class PageContext:
    """Who made the page, when, with which command."""

    command: str
    generated_at: datetime
    version: str = __version__

    @classmethod
    def of(cls, argv: Sequence[str]) -> PageContext:
        return cls(shlex.join(["aoe-runner", *argv]), datetime.now(timezone.utc))


@dataclass
class Chart:
    title: str
    traces: list[dict[str, Any]]
    layout: dict[str, Any]
    run_links: bool = False  # a point's customdata is a run id: clicking it shows `aoe-runner runs show ID`
    narrow_hides: str | None = None  # an axis ("yaxis") of long names whose tick labels a phone-width screen hides


@dataclass
class Column:
    label: str
    kind: Literal["text", "number", "long"] = "text"  # long: names and paths, which may wrap anywhere


@dataclass
class Table:
    title: str
    columns: list[Column]
    rows: list[list[Any]]
    note: str = ""  # how many rows were left out, and why


@dataclass
class Page:
    title: str
    facts: list[tuple[str, str]] = field(default_factory=list)  # (label, value) cards under the title
    warnings: list[str] = field(default_factory=list)
    verdict: tuple[str, str] | None = None  # (class: good, bad or neutral; text) in a banner
    charts: list[Chart] = field(default_factory=list)
    table: Table | None = None
    notes: list[str] = field(default_factory=list)


def render(page: Page, context: PageContext) -> Document:
    data = {
        "charts": [
            {"traces": c.traces, "layout": c.layout, "runLinks": c.run_links, "narrowHides": c.narrow_hides} for c in page.charts
        ],
        "table": _table_data(page.table),
    }
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f'<meta name="generator" content="aoe-runner {text(context.version)}">\n',
        f"<title>{text(page.title)}</title>\n<style>\n{own('page.css')}</style>\n</head>\n",
        f'<body data-charts="{len(page.charts)}">\n<header>\n<h1>{text(page.title)}</h1>\n',
        _meta(context),
        "</header>\n<main>\n",
        _noscript(page),
        _warnings(page.warnings),
        _verdict(page.verdict),
        _facts(page.facts),
        _charts(page.charts),
        _table(page.table),
        _notes(page.notes),
        "</main>\n",
        f'<script type="application/json" id="page-data">{script_json(data)}</script>\n',
        f"<script>{plotly_js()}</script>\n<script>\n{own('page.js')}</script>\n</body>\n</html>\n",
    ]
    return Document("".join(parts).encode("utf-8"))


def _meta(context: PageContext) -> str:
    when = context.generated_at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        f'<p class="meta">Generated {text(when)} by aoe-runner {text(context.version)} with '
        f"<code>{text(context.command)}</code></p>\n"
    )


def _noscript(page: Page) -> str:
    """What a viewer that runs no scripts shows: the facts are HTML, the charts and the table are drawn by page.js."""
    if not page.charts and page.table is None:
        return ""
    return (
        '<noscript><p class="noscript warnings">The charts and the table of this page are drawn by the JavaScript inside '
        "it, which this viewer does not run: open the file in a web browser (it needs no network).</p></noscript>\n"
    )


def _warnings(warnings: list[str]) -> str:
    if not warnings:
        return ""
    items = "".join(f"<li>{text(warning)}</li>" for warning in warnings)
    return f'<section class="warnings" role="alert"><h2>Warning</h2><ul>{items}</ul></section>\n'


def _verdict(verdict: tuple[str, str] | None) -> str:
    if verdict is None:
        return ""
    kind, words = verdict
    return f'<p class="verdict {text(kind)}" id="verdict">{text(words)}</p>\n'


def _facts(facts: list[tuple[str, str]]) -> str:
    if not facts:
        return ""
    cards = "".join(f'<div class="fact"><span>{text(name)}</span><b>{text(value)}</b></div>' for name, value in facts)
    return f'<section class="facts">{cards}</section>\n'


def _charts(charts: list[Chart]) -> str:
    if not charts:
        return ""
    boxes = "".join(
        f'<figure class="chart"><figcaption>{text(chart.title)}</figcaption><div class="plot" id="chart-{index}"></div></figure>'
        for index, chart in enumerate(charts)
    )
    picked = '<p class="picked" id="picked" hidden></p>' if any(chart.run_links for chart in charts) else ""
    return f'<section class="charts">{boxes}</section>\n{picked}\n'


def _table(table: Table | None) -> str:
    if table is None:
        return ""
    note = f'<p class="note" id="table-note">{text(table.note)}</p>' if table.note else ""
    return (
        f'<section class="entries"><h2>{text(table.title)}</h2>'
        '<label class="filter">Filter <input type="search" id="filter" placeholder="text in any column" autocomplete="off">'
        '</label> <span id="row-count"></span>'
        f'{note}<div class="scroll"><table id="table"><thead></thead><tbody></tbody></table></div></section>\n'
    )


def _notes(notes: list[str]) -> str:
    return "".join(f'<p class="note">{text(note)}</p>\n' for note in notes)


def _table_data(table: Table | None) -> dict[str, Any] | None:
    if table is None:
        return None
    return {"columns": [[c.label, c.kind] for c in table.columns], "rows": table.rows}


def left_out_note(shown: int, total: int, what: str, top: int) -> str:
    """'12,345 operators: the table shows the top 2,000 by time saved; 10,345 left out (--top 2000)'."""
    if shown >= total:
        return ""
    return f"{total:,} {what}: the table shows the first {shown:,}; {total - shown:,} left out (--top {top})"
