"""`bank best` as a table, JSON lines or CSV: per operator, the fastest tuned result and the run that holds it."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from aoe_runner.common.safe_text import visible

if TYPE_CHECKING:
    from aoe_runner.store.best import Best

HEADERS = ["kind", "name", "tuned µs", "baseline µs", "speed-up", "run", "host", "started"]


def best_json(found: list[Best]) -> str:
    import json

    return "".join(json.dumps(asdict(best)) + "\n" for best in found)


def best_csv(found: list[Best]) -> str:
    from aoe_runner.render.csv_text import write_csv

    return write_csv(HEADERS, [_cells(best) for best in found])


def best_table(found: list[Best]) -> str:
    cells = [_cells(best) for best in found]
    if not found:
        return "no recorded run has operator results for this SoC and script\n"
    from tabulate import tabulate

    rows = [[visible(str(cell)) for cell in row] for row in cells]
    return tabulate(rows, headers=HEADERS, tablefmt="simple", disable_numparse=True) + "\n"


def _cells(best: Best) -> list[object]:
    speedup = f"{best.speedup:.3f}x" if best.speedup is not None else "-"
    baseline = f"{best.baseline_us:g}" if best.baseline_us is not None else "-"
    return [best.kind, best.name, f"{best.tuned_us:g}", baseline, speedup, best.run, best.host, best.started_at]
