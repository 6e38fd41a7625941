"""`--format csv`: one row per bank entry (summary) or per changed entry (diff), for spreadsheets.

Both have the same leading columns (kind, name, op_types, tuning_mode, unit), so one sheet can read either. Numbers
are written as numbers, as precise as the inputs they came from (render.numbers); units are spelled `µs` and `ms`
as in every table. Every text cell goes through safe_text.csv_cell, so no name opens as a formula.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aoe_runner.render.csv_text import write_csv
from aoe_runner.render.formats import DiffView, Formatter, SummaryView
from aoe_runner.render.numbers import difference, ratio

if TYPE_CHECKING:
    from aoe_runner.campaign.plan import CampaignPlan
    from aoe_runner.campaign.record import CampaignRecord
    from aoe_runner.errors import InputError
    from aoe_runner.preflight.report import PreflightReport
    from aoe_runner.releases.version import BankVersion
    from aoe_runner.report.diff import BankDiff, EntryChange
    from aoe_runner.report.models import BankSummary
    from aoe_runner.results.validation import FileCheck
    from aoe_runner.runs.best import Best
    from aoe_runner.runs.outcomes import RunListing
    from aoe_runner.verify.report import VerifyReport

ENTRY_COLUMNS = ("kind", "name", "op_types", "tuning_mode", "unit")
SUMMARY_COLUMNS = (
    *ENTRY_COLUMNS, "before", "after", "speedup", "time_saved", "update_mode", "times_tuned", "file", "report_key",
    "timestamp", "conflict",
)  # fmt: skip
DIFF_COLUMNS = ("change", *ENTRY_COLUMNS, "old_before", "old_after", "new_before", "new_after", "after_change_pct")
UNITS = {"us": "µs", "ms": "ms"}
_OPERATOR_LABEL = re.compile(r"(?P<name>.*) \[(?P<types>[^\[\]]*)\](?: \((?P<mode>[^()]*)\))?", re.DOTALL)


class CsvFormatter(Formatter):
    """`--format csv`: rows for a spreadsheet, every text cell safe to open."""

    format_name = "csv"

    def summary(self, view: SummaryView, top: int | None) -> str:
        return self.summary_csv(view.summary, top)

    def diff(self, view: DiffView, top: int | None) -> str:
        return self.diff_csv(view.diff, top)

    def preflight(self, report: PreflightReport, verbose: bool = False) -> str:
        from aoe_runner.render.preflight_table import render_preflight_csv

        return render_preflight_csv(report)

    def validation(self, checked: Sequence[FileCheck], errors: Sequence[InputError]) -> str:
        from aoe_runner.render.validate_report import validation_csv

        return validation_csv(checked, errors)

    def campaign_plan(self, plan: CampaignPlan) -> str:
        from aoe_runner.render.campaigns import plan_rows

        return _rows_csv(plan_rows(plan))

    def campaign(self, record: CampaignRecord) -> str:
        from aoe_runner.render.campaigns import job_rows

        return _rows_csv([{"campaign": record.id, **row} for row in job_rows(record)])

    def bank_versions(self, versions: list[BankVersion]) -> str:
        from aoe_runner.render.releases import version_rows

        return _rows_csv(version_rows(versions))

    def campaign_list(self, records: list[CampaignRecord]) -> str:
        from aoe_runner.render.campaigns import LIST_COLUMNS, list_rows

        return _rows_csv(list_rows(records), LIST_COLUMNS)

    def run_list(self, listing: RunListing) -> str:
        from aoe_runner.render.runs import run_list_csv

        return run_list_csv(listing)

    def best(self, found: list[Best]) -> str:
        from aoe_runner.render.best import best_csv

        return best_csv(found)

    def verify(self, report: VerifyReport) -> str:
        from aoe_runner.render.verify_report import render_verify_csv

        return render_verify_csv(report)

    def summary_csv(self, summary: BankSummary, top: int | None) -> str:
        rows: list[Sequence[object]] = []
        for op in summary.operators[:top]:
            before, after = op.before_us, op.after_us
            rows.append(
                ("operator", op.name, "+".join(op.op_types), op.tuning_mode, "µs", before, after,
                 ratio(op.speedup, before, after), difference(op.time_saved_us, before, after), op.update_mode.value,
                 op.times_tuned, op.source.file, op.source.report_key, op.source.timestamp, op.conflict)
            )  # fmt: skip
        for sg in summary.subgraphs[:top]:
            before, after = sg.before_ms, sg.after_ms
            rows.append(
                ("subgraph", sg.repo_key, "", None, "ms", before, after, ratio(sg.speedup, before, after),
                 difference(sg.time_saved_ms, before, after), sg.update_mode.value, sg.times_tuned, sg.source.file,
                 sg.source.report_key, sg.source.timestamp, sg.conflict)
            )  # fmt: skip
        if summary.legacy is not None:
            from aoe_runner.render.legacy import csv_rows

            rows += csv_rows(summary, top)
        return write_csv(SUMMARY_COLUMNS, rows)

    def diff_csv(self, diff: BankDiff, top: int | None) -> str:
        rows = [
            (c.change.value, *entry_columns(c), c.old_before, c.old_after, c.new_before, c.new_after,
             ratio(c.after_change_pct, c.old_after, c.new_after))
            for c in diff.changes[:top]
        ]  # fmt: skip
        return write_csv(DIFF_COLUMNS, rows)


def entry_columns(change: EntryChange) -> tuple[str, str, str, str | None, str]:
    """kind, name, op_types, tuning_mode and unit of a changed entry, as the summary CSV has them."""
    unit = UNITS.get(change.unit, change.unit)
    if change.kind == "subgraph":
        return ("subgraph", change.label.removeprefix("subgraph "), "", None, unit)
    if change.kind == "legacy_operator":  # its label is its name: no op types, no tuning mode
        return ("legacy_operator", change.label, "", None, unit)
    match = _OPERATOR_LABEL.fullmatch(change.label)
    if match is None:
        return ("operator", change.label, "", None, unit)
    return ("operator", match["name"], match["types"], match["mode"], unit)


def _rows_csv(rows: list[dict[str, Any]], headers: Sequence[str] = ()) -> str:
    """Plain rows as CSV, one column per key (lists joined with spaces), every text cell safe to open."""
    from aoe_runner.render.csv_text import write_csv

    columns = list(headers or (rows[0] if rows else []))
    cells = [[" ".join(map(str, v)) if isinstance(v, list) else v for v in (row.get(c) for c in columns)] for row in rows]
    return write_csv(columns, cells)
