"""`bank best` as a table, JSON lines or CSV: per operator, the fastest tuned result and the run that holds it."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from aoe_runner.common.safe_text import visible
from aoe_runner.render.table import Column
from aoe_runner.render.table import render as render_table

if TYPE_CHECKING:
    from aoe_runner.store.best import Best

COLUMNS = [
    Column("kind"), Column.text("name"), Column.number("tuned µs"), Column.number("baseline µs", optional=True),
    Column.number("speed-up"), Column("run"), Column("host"), Column("started", optional=True),
]  # fmt: skip
HEADERS = [column.header for column in COLUMNS]


def best_json(found: list[Best]) -> str:
    import json

    return "".join(json.dumps(asdict(best)) + "\n" for best in found)


def best_csv(found: list[Best]) -> str:
    from aoe_runner.render.csv_text import write_csv

    return write_csv(HEADERS, [_cells(best) for best in found])


def best_table(found: list[Best], width: int | None = None) -> str:
    if not found:
        return "no recorded run has operator results for this SoC and script\n"
    rows = [[visible(str(cell)) for cell in _cells(best)] for best in found]
    return render_table(COLUMNS, rows, width) + "\n"


def _cells(best: Best) -> list[object]:
    speedup = f"{best.speedup:.3f}x" if best.speedup is not None else "-"
    baseline = f"{best.baseline_us:g}" if best.baseline_us is not None else "-"
    return [best.kind, best.name, f"{best.tuned_us:g}", baseline, speedup, best.run, best.host, best.started_at]
