"""`--format table` (for a terminal) and `--format markdown` (to paste into a pull request)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aoe_runner.common.words import count
from aoe_runner.render.formats import DiffView, Formatter, SummaryView
from aoe_runner.render.table import Column
from aoe_runner.render.text_blocks import LEGACY_LAYOUT, TextBlocks, flags, limited, num, speedup

if TYPE_CHECKING:
    from pathlib import Path

    from aoe_runner.campaign.plan import CampaignPlan
    from aoe_runner.campaign.record import CampaignRecord
    from aoe_runner.errors import InputError
    from aoe_runner.preflight.report import PreflightReport
    from aoe_runner.releases.version import BankVersion
    from aoe_runner.report.diff import BankDiff
    from aoe_runner.report.models import BankSummary, OperatorEntry, RepoTotals, SubgraphEntry
    from aoe_runner.results.validation import FileCheck
    from aoe_runner.runs.best import Best
    from aoe_runner.runs.manifest import RunManifest
    from aoe_runner.runs.outcomes import RunListing
    from aoe_runner.store.status import StoreStatus
    from aoe_runner.verify.report import VerifyReport

DEFAULT_ROWS = 20


class TableFormatter(TextBlocks, Formatter):
    """`--format table` fitted to `width` columns, or `--format markdown`."""

    def __init__(self, markdown: bool, width: int | None = None, colour: bool = False) -> None:
        super().__init__(markdown, width, colour)
        self.format_name = "markdown" if markdown else "table"
        self.columns = width  # the terminal's, for the lines of a markdown document that are wrapped (preflight's header)

    def summary(self, view: SummaryView, top: int | None) -> str:
        """From the plain summary data (render/plain_view.py); a legacy Auto Tune part is rare, and read from the
        models, as render/legacy.py does."""
        from aoe_runner.render.plain_view import summary_view

        data, _ = parts = view.parts
        legacy = data.get("legacy") is not None or any(row["layout"] == LEGACY_LAYOUT for row in data["files"])
        return self.summary_text(view.summary if legacy else summary_view(parts), top)

    def diff(self, view: DiffView, top: int | None) -> str:
        return self.diff_text(view.diff, top)

    def preflight(self, report: PreflightReport, verbose: bool = False) -> str:
        """What needs action; with `verbose`, and in markdown, every check and every formula."""
        from aoe_runner.render.preflight_table import render_preflight, render_preflight_short

        if self.markdown or verbose:
            return render_preflight(report, self.columns, as_markdown=self.markdown, colour=self.colours is not None)
        return render_preflight_short(report, self.columns, colour=self.colours is not None)

    def validation(self, checked: Sequence[FileCheck], errors: Sequence[InputError]) -> str:
        from aoe_runner.render.validate_report import validation_text

        return validation_text(checked)

    def run_list(self, listing: RunListing) -> str:
        from aoe_runner.render.runs import render_run_list, run_list_markdown

        return run_list_markdown(listing) if self.markdown else render_run_list(listing, self.width, self.colours is not None)

    def run(self, manifest: RunManifest, directory: Path) -> str:
        from aoe_runner.render.runs import render_run

        return render_run(manifest, directory)

    def best(self, found: list[Best]) -> str:
        from aoe_runner.render.best import best_table

        return best_table(found, self.width)

    def campaign_plan(self, plan: CampaignPlan) -> str:
        from aoe_runner.render.campaigns import plan_text

        return plan_text(plan, self.markdown, self.width)

    def campaign(self, record: CampaignRecord) -> str:
        from aoe_runner.render.campaigns import campaign_text

        return campaign_text(record, self.markdown, self.width)

    def campaign_list(self, records: list[CampaignRecord]) -> str:
        from aoe_runner.render.campaigns import list_text

        return list_text(records, self.markdown, self.width)

    def bank_versions(self, versions: list[BankVersion]) -> str:
        from aoe_runner.render.releases import versions_text

        return versions_text(versions, self.markdown, self.width)

    def store_status(self, status: StoreStatus) -> str:
        from aoe_runner.render.store_status import render_store_status

        return render_store_status(status)

    def verify(self, report: VerifyReport) -> str:
        from aoe_runner.render.verify_report import render_verify

        return render_verify(report, markdown=self.markdown, width=self.columns, colour=self.colours is not None)

    def summary_text(self, summary: BankSummary, top: int | None) -> str:
        rows = top or DEFAULT_ROWS
        t = summary.totals
        parts = [
            self.title("Knowledge-bank summary"),
            self.prose(
                f"{count(t.operators, 'operator')} ({t.operators_added} added, {t.operators_updated} updated) and "
                f"{count(t.subgraphs, 'subgraph')} ({t.subgraphs_added} added, {t.subgraphs_updated} updated), "
                f"from {count(t.reports, 'report')} in {count(t.files, 'file')} ({t.partial_files} partial)."
            ),
            self.pairs(self._totals_rows(summary)),
        ]
        if summary.operators:
            parts += [self.title(limited("Operators by time saved", rows, len(summary.operators))),
                      self.table(OPERATOR_COLUMNS, [self._operator_row(e) for e in summary.operators[:rows]])]  # fmt: skip
        if summary.subgraphs:
            parts += [self.title(limited("Subgraphs by time saved", rows, len(summary.subgraphs))),
                      self.table(SUBGRAPH_COLUMNS, [self._subgraph_row(e) for e in summary.subgraphs[:rows]])]  # fmt: skip
        if summary.op_types:
            op_type_rows = [
                (self.text(s.op_type), s.entries, num(s.time_saved_us), speedup(s.median_speedup))
                for s in summary.op_types[:rows]
            ]
            parts += [self.title(limited("Per op type", rows, len(summary.op_types))),
                      self.table(OP_TYPE_COLUMNS, op_type_rows)]  # fmt: skip
        if summary.model_times:
            model_rows = [
                (self.text(p.section), self.text(p.tuning_name or ""), num(p.before_ms), num(p.after_ms), speedup(p.speedup))
                for p in summary.model_times
            ]
            parts += [self.title("Model-level times"),
                      self.table(MODEL_COLUMNS, model_rows)]  # fmt: skip
        no_gain_title = f"No real gain (speed-up below {1 + summary.min_gain_pct / 100:.3g}x)"
        parts += self.bullets(no_gain_title, summary.no_real_gain)
        parts += self.bullets("Conflicts (latest result slower than an earlier one from another file)", summary.conflicts)
        if summary.legacy is not None or any(info.layout == LEGACY_LAYOUT for info in summary.files):
            from aoe_runner.render.legacy import table_parts

            parts += table_parts(self, summary, rows)
        return "\n\n".join(parts) + "\n"

    def diff_text(self, diff: BankDiff, top: int | None) -> str:
        from aoe_runner.report.diff import ChangeKind

        rows = top or DEFAULT_ROWS
        counts = ", ".join(f"{diff.counts.get(kind, 0)} {kind.words}" for kind in ChangeKind)
        changed = [c for c in diff.changes if c.change is not ChangeKind.UNCHANGED]
        old, new = diff.old, diff.new
        parts = [
            self.title("Results diff"),
            self.prose(
                f"old: {count(old.operators, 'operator')}, {count(old.subgraphs, 'subgraph')} from "
                f"{count(old.reports, 'report')}; new: {count(new.operators, 'operator')}, "
                f"{count(new.subgraphs, 'subgraph')} from {count(new.reports, 'report')}."
            ),
            self.prose(f"{counts} (threshold {diff.threshold_pct:g}%)."),
        ]
        if old.legacy_operators is not None or new.legacy_operators is not None:
            parts.insert(2, self.prose(_legacy_sides(old.legacy_operators or 0, new.legacy_operators or 0)))
        if changed:
            change_rows = [
                (
                    c.change.value,
                    c.kind,
                    self.name(c.label),
                    num(c.old_after),
                    num(c.new_after),
                    UNITS.get(c.unit, c.unit),
                    _pct(c.after_change_pct),
                )
                for c in changed[:rows]
            ]
            parts += [self.title(limited("Changed entries", rows, len(changed))), self.table(CHANGE_COLUMNS, change_rows)]
        if diff.model_deltas:
            delta_rows = [
                (d.change.value, self.text(d.section), self.text(d.tuning_name or ""), num(d.old_after_ms),
                 num(d.new_after_ms), _pct(d.change_pct))
                for d in diff.model_deltas
            ]  # fmt: skip
            parts += [self.title("Model-level times"),
                      self.table(MODEL_CHANGE_COLUMNS, delta_rows)]  # fmt: skip
        return "\n\n".join(parts) + "\n"

    def _totals_rows(self, summary: BankSummary) -> list[tuple[str, str]]:
        t = summary.totals
        rows = [
            (
                "operator time saved",
                f"{num(t.operator_time_saved_us)} µs (median speed-up {speedup(t.median_operator_speedup)})",
            ),
            (
                "subgraph time saved",
                f"{num(t.subgraph_time_saved_ms)} ms (median speed-up {speedup(t.median_subgraph_speedup)})",
            ),
            ("bank hit rate", f"OPAT {_rate(t.opat_repo)}, SGAT {_rate(t.sgat_repo)}"),
            ("unsatisfied", f"OPAT {t.opat_repo.unsatisfied}, SGAT {t.sgat_repo.unsatisfied}"),
            ("failed / incomplete reports", f"{t.failed_reports} / {t.incomplete_reports}"),
            ("failed operators", ", ".join(self.text(name) for name in t.failed_operators) or "none"),
            ("tuning time", f"{num(t.tuning_time_s)} s" + _missing_time(t.reports_without_tuning_time)),
        ]
        return rows

    def _operator_row(self, e: OperatorEntry) -> Sequence[object]:
        return (
            self.name(e.name), self.text("+".join(e.op_types)), self.text(e.tuning_mode or ""), num(e.before_us),
            num(e.after_us), speedup(e.speedup), num(e.time_saved_us), word(e.update_mode), e.times_tuned,
            flags(e.conflict),
        )  # fmt: skip

    def _subgraph_row(self, e: SubgraphEntry) -> Sequence[object]:
        return (self.text(e.repo_key), num(e.before_ms), num(e.after_ms), speedup(e.speedup), num(e.time_saved_ms),
                word(e.update_mode), e.times_tuned, flags(e.conflict))  # fmt: skip


UPDATE = Column("update", optional=True)
TUNED = Column.number("tuned", optional=True)
FLAG = Column("flag", optional=True)
OPERATOR_COLUMNS = [
    Column.text("operator"), Column.text("op type"), Column("mode"), Column.number("before µs", optional=True),
    Column.number("after µs"), Column.number("speed-up"), Column.number("saved µs"), UPDATE, TUNED, FLAG,
]  # fmt: skip
SUBGRAPH_COLUMNS = [
    Column.text("repo_key"), Column.number("before ms", optional=True), *map(Column.number, ("after ms", "speed-up", "saved ms")),
    UPDATE, TUNED, FLAG,
]  # fmt: skip
OP_TYPE_COLUMNS = [Column.text("op type"), *map(Column.number, ("entries", "saved µs", "median speed-up"))]
MODEL_COLUMNS = [Column("section"), Column.text("tuning name"), *map(Column.number, ("before ms", "after ms", "speed-up"))]
CHANGE_COLUMNS = [
    Column("change", verdict=True), Column("kind"), Column.text("entry"), Column.number("old after"), Column.number("new after"),
    Column("unit", optional=True), Column.number("after Δ"),
]  # fmt: skip
MODEL_CHANGE_COLUMNS = [
    Column("change", verdict=True), Column("section"), Column.text("tuning name"), *map(Column.number, ("old ms", "new ms", "Δ")),
]  # fmt: skip


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:+.2f}%"


def _rate(totals: RepoTotals) -> str:
    if not totals.total:
        return "n/a"
    return f"{totals.hit / totals.total:.1%} ({totals.hit} of {totals.total})"


def word(value: object) -> str:
    """An enum's value (a model's field) or the word itself (plain data)."""
    return str(getattr(value, "value", value))


def _legacy_sides(old: int, new: int) -> str:
    return f"legacy Auto Tune: old {count(old, 'entry', 'entries')}, new {count(new, 'entry', 'entries')} (time unit not stated)."


def _missing_time(reports: int) -> str:
    return f" ({count(reports, 'report')} without tuning_time(s): interrupted?)" if reports else ""


UNITS = {"us": "µs", "ms": "ms"}
