"""The legacy Auto Tune part of a summary: its own block in a table or markdown, its own rows in CSV.

Auto Tune (CANN 5.x and earlier) does not state its time unit, so its times are shown as written, in columns
without a unit, and never added to an AOE figure in µs or ms. When a legacy file is among the inputs, a last
block names the variant each file was read as.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aoe_runner.render.numbers import difference, ratio
from aoe_runner.render.table import Column
from aoe_runner.render.text_blocks import LEGACY_LAYOUT, TextBlocks, limited, num, speedup
from aoe_runner.report.legacy import LegacySummary, label

if TYPE_CHECKING:
    from aoe_runner.report.models import BankSummary, FileInfo

VARIANTS = {"training": "AOE training", "offline": "AOE offline CLI", LEGACY_LAYOUT: "legacy Auto Tune (CANN 5.x and earlier)"}
COLUMNS = [
    Column.text("operator"), *map(Column.number, ("before", "after", "speed-up", "saved")), Column("update"),
    Column.number("tuned", optional=True), Column("flag", optional=True),
]  # fmt: skip
FILE_COLUMNS = [Column.text("file"), Column("variant"), Column.number("reports"), Column("partial", optional=True)]
KIND = "legacy_operator"
UNIT = "unknown"


def table_parts(formatter: TextBlocks, summary: BankSummary, rows: int) -> list[str]:
    """The legacy block and the files' variants; nothing when no legacy Auto Tune file was read."""
    legacy = summary.legacy
    parts: list[str] = []
    if legacy is not None:
        parts += _legacy_block(formatter, legacy, rows, summary.min_gain_pct)
    if any(info.layout == LEGACY_LAYOUT for info in summary.files):
        parts += _files_block(formatter, summary.files, rows)
    return parts


def csv_rows(summary: BankSummary, top: int | None) -> list[Sequence[object]]:
    """Rows in the summary CSV's columns: kind legacy_operator, unit unknown."""
    if summary.legacy is None:
        return []
    return [
        (KIND, label(e), "", None, UNIT, e.before, e.after, ratio(e.speedup, e.before, e.after),
         difference(e.time_saved, e.before, e.after), e.update_mode.value, e.times_tuned, e.file, None, e.timestamp,
         e.conflict)
        for e in summary.legacy.entries[:top]
    ]  # fmt: skip


def _legacy_block(formatter: TextBlocks, legacy: LegacySummary, rows: int, min_gain_pct: float) -> list[str]:
    f = formatter
    files = f"{legacy.files} legacy Auto Tune file" + ("" if legacy.files == 1 else "s")
    parts = [
        f.title("Legacy Auto Tune results (CANN 5.x and earlier)"),
        f.prose(
            f"{files} (tune_result_*.json). Auto Tune does not state its time unit: these times are shown as written,"
            " never as µs, and are left out of every figure above."
        ),
        f.pairs(_totals_rows(legacy)),
    ]
    if legacy.entries:
        title = "Legacy Auto Tune operators by time saved (time unit not stated)"
        shown = legacy.entries[:rows]
        table_rows = [
            (f.name(label(e)), num(e.before), num(e.after), speedup(e.speedup), num(e.time_saved), e.update_mode.value,
             e.times_tuned, "conflict" if e.conflict else "")
            for e in shown
        ]  # fmt: skip
        parts += [f.title(limited(title, rows, len(legacy.entries))), f.table(COLUMNS, table_rows)]
    parts += f.bullets(f"Legacy Auto Tune, no real gain (speed-up below {1 + min_gain_pct / 100:.3g}x)", legacy.no_real_gain)
    parts += f.bullets(
        "Legacy Auto Tune conflicts (latest result slower than an earlier one from another file)", legacy.conflicts
    )
    return parts


def _totals_rows(legacy: LegacySummary) -> list[Sequence[object]]:
    bank = legacy.bank
    hit_rate = "n/a" if not bank.total else f"{bank.hit / bank.total:.1%} ({bank.hit} of {bank.total})"
    return [
        ("legacy operators", f"{legacy.operators:,} ({legacy.operators_added:,} added, {legacy.operators_updated:,} updated)"),
        ("legacy time saved", f"{num(legacy.time_saved)}, unit not stated (median speed-up {speedup(legacy.median_speedup)})"),
        ("legacy bank hit rate", hit_rate),
        (
            "legacy bank flags",
            f"{bank.total:,} entries: {bank.add:,} added, {bank.update:,} updated, {bank.reserved:,} reserved, "
            f"{bank.unsatisfied:,} with no flag set; {bank.status_only:,} with status_data only",
        ),
    ]


def _files_block(formatter: TextBlocks, files: list[FileInfo], rows: int) -> list[str]:
    f = formatter
    table_rows = [
        (f.text(info.path), VARIANTS.get(info.layout, info.layout), info.reports, "yes" if info.partial else "")
        for info in files[:rows]
    ]
    return [f.title(limited("Files by variant", rows, len(files))), f.table(FILE_COLUMNS, table_rows)]
