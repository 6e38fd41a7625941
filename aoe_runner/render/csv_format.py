"""`--format csv`: one row per bank entry (summary) or per changed entry (diff), for spreadsheets.

Numbers are written as numbers; every text cell goes through safe_text.csv_cell, so no name opens as a formula.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from aoe_runner.render.safe_text import csv_cell

if TYPE_CHECKING:
    from aoe_runner.diff import BankDiff
    from aoe_runner.summary import BankSummary

SUMMARY_COLUMNS = (
    "kind", "name", "op_types", "tuning_mode", "unit", "before", "after", "speedup", "time_saved",
    "update_mode", "times_tuned", "file", "report_key", "timestamp", "conflict",
)  # fmt: skip
DIFF_COLUMNS = ("change", "kind", "label", "unit", "old_before", "old_after", "new_before", "new_after", "after_change_pct")


class CsvFormatter:
    def summary(self, summary: BankSummary, top: int | None) -> str:
        rows: list[Sequence[object]] = []
        for op in summary.operators[:top]:
            rows.append(
                ("operator", op.name, "+".join(op.op_types), op.tuning_mode, "us", op.before_us, op.after_us,
                 op.speedup, op.time_saved_us, op.update_mode.value, op.times_tuned, op.source.file,
                 op.source.report_key, op.source.timestamp, op.conflict)
            )  # fmt: skip
        for sg in summary.subgraphs[:top]:
            rows.append(
                ("subgraph", sg.repo_key, "", None, "ms", sg.before_ms, sg.after_ms, sg.speedup, sg.time_saved_ms,
                 sg.update_mode.value, sg.times_tuned, sg.source.file, sg.source.report_key, sg.source.timestamp,
                 sg.conflict)
            )  # fmt: skip
        return _write(SUMMARY_COLUMNS, rows)

    def diff(self, diff: BankDiff, top: int | None) -> str:
        rows = [
            (c.change.value, c.kind, c.label, c.unit, c.old_before, c.old_after, c.new_before, c.new_after, c.after_change_pct)
            for c in diff.changes[:top]
        ]
        return _write(DIFF_COLUMNS, rows)


def _write(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([[_cell(value) for value in row] for row in rows])
    return buffer.getvalue()


def _cell(value: object) -> object:
    if value is None:
        return ""
    return csv_cell(value) if isinstance(value, str) else value
