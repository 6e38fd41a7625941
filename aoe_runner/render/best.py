"""`bank best` as a table, JSON lines or CSV: per operator, the fastest tuned result and the run that holds it."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from aoe_runner.common.safe_text import visible
from aoe_runner.render.numbers import local_time, plain, times
from aoe_runner.render.table import Column
from aoe_runner.render.table import render as render_table

if TYPE_CHECKING:
    from aoe_runner.runs.best import Best

COLUMNS = [
    Column("kind", optional=True), Column.text("name"), Column.number("tuned µs"),
    Column.number("baseline µs", optional=True), Column.number("speed-up"), Column("run"), Column("host", optional=True),
    Column("started", optional=True),
]  # fmt: skip
HEADERS = [column.header for column in COLUMNS]


def best_json(found: list[Best]) -> str:
    import json

    return "".join(json.dumps(asdict(best)) + "\n" for best in found)


def best_csv(found: list[Best]) -> str:
    """The table's columns, the speed-up as a number."""
    from aoe_runner.render.csv_text import write_csv

    return write_csv(HEADERS, [_cells(best, text=False) for best in found])


def best_table(found: list[Best], width: int | None = None) -> str:
    if not found:
        return "no recorded tuning run (of the --soc and --script given) has operator results\n"
    rows = [[visible(cell) for cell in _cells(best, text=True)] for best in found]
    return render_table(COLUMNS, rows, width) + "\n"


def _cells(best: Best, text: bool) -> list[str]:
    """A row's cells; the speed-up as text shows it (`1.374x`) when `text`, else as a number."""
    speedup = times(best.speedup) if text else plain(best.speedup)
    baseline = plain(best.baseline_us) or ("-" if text else "")
    started = local_time(best.started_at)
    return [best.kind, best.name, f"{best.tuned_us:g}", baseline, speedup, best.run, best.host, started]
