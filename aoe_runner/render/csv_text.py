"""CSV text as every CSV output of aoe-runner writes it: safe text cells, empty cells for None."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from aoe_runner.common.safe_text import csv_cell


def write_csv(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """CSV text with safe text cells and empty cells for None; every CSV output of aoe-runner is written here."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([[_cell(value) for value in row] for row in rows])
    return buffer.getvalue()


def _cell(value: object) -> object:
    if value is None:
        return ""
    return csv_cell(value) if isinstance(value, str) else value
