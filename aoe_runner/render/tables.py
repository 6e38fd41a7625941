"""`--format table` (for a terminal) and `--format markdown` (to paste into a pull request)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tabulate import tabulate

from aoe_runner.render.safe_text import markdown, visible
from aoe_runner.render.width import table, wrap, wrap_line
from aoe_runner.render.words import count
from aoe_runner.summary import BankSummary, OperatorEntry, RepoTotals, SubgraphEntry

if TYPE_CHECKING:
    from aoe_runner.diff import BankDiff

DEFAULT_ROWS = 20
_NAME_WIDTH = 64


class TableFormatter:
    def __init__(self, markdown: bool, width: int | None = None) -> None:
        self.markdown = markdown
        self.width = None if markdown else width  # markdown is pasted, never fitted to a terminal

    def summary(self, summary: BankSummary, top: int | None) -> str:
        rows = top or DEFAULT_ROWS
        t = summary.totals
        parts = [
            self._title("Knowledge-bank summary"),
            self._prose(
                f"{count(t.operators, 'operator')} ({t.operators_added} added, {t.operators_updated} updated) and "
                f"{count(t.subgraphs, 'subgraph')} ({t.subgraphs_added} added, {t.subgraphs_updated} updated), "
                f"from {count(t.reports, 'report')} in {count(t.files, 'file')} ({t.partial_files} partial)."
            ),
            self._table(["", ""], self._totals_rows(summary), key_value=True),
        ]
        if summary.operators:
            parts += [self._title(_limited("Operators by time saved", rows, len(summary.operators))),
                      self._table(OPERATOR_HEADERS, [self._operator_row(e) for e in summary.operators[:rows]])]  # fmt: skip
        if summary.subgraphs:
            parts += [self._title(_limited("Subgraphs by time saved", rows, len(summary.subgraphs))),
                      self._table(SUBGRAPH_HEADERS, [self._subgraph_row(e) for e in summary.subgraphs[:rows]])]  # fmt: skip
        if summary.op_types:
            op_type_rows = [
                (self._text(s.op_type), s.entries, _num(s.time_saved_us), _speedup(s.median_speedup))
                for s in summary.op_types[:rows]
            ]
            parts += [self._title(_limited("Per op type", rows, len(summary.op_types))),
                      self._table(["op type", "entries", "saved µs", "median speed-up"], op_type_rows)]  # fmt: skip
        if summary.model_times:
            model_rows = [
                (self._text(p.section), self._text(p.tuning_name or ""), _num(p.before_ms), _num(p.after_ms), _speedup(p.speedup))
                for p in summary.model_times
            ]
            parts += [self._title("Model-level times"),
                      self._table(["section", "tuning name", "before ms", "after ms", "speed-up"], model_rows)]  # fmt: skip
        no_gain_title = f"No real gain (speed-up below {1 + summary.min_gain_pct / 100:.3g}x)"
        parts += self._list(no_gain_title, summary.no_real_gain)
        parts += self._list("Conflicts (latest result slower than an earlier one from another file)", summary.conflicts)
        if summary.legacy is not None or any(info.layout == "legacy_auto_tune" for info in summary.files):
            from aoe_runner.render.legacy import table_parts

            parts += table_parts(self, summary, rows)
        return "\n\n".join(parts) + "\n"

    def diff(self, diff: BankDiff, top: int | None) -> str:
        from aoe_runner.diff import ChangeKind

        rows = top or DEFAULT_ROWS
        counts = ", ".join(f"{diff.counts.get(kind, 0)} {kind.words}" for kind in ChangeKind)
        changed = [c for c in diff.changes if c.change is not ChangeKind.UNCHANGED]
        old, new = diff.old, diff.new
        parts = [
            self._title("Results diff"),
            self._prose(
                f"old: {count(old.operators, 'operator')}, {count(old.subgraphs, 'subgraph')} from "
                f"{count(old.reports, 'report')}; new: {count(new.operators, 'operator')}, "
                f"{count(new.subgraphs, 'subgraph')} from {count(new.reports, 'report')}."
            ),
            self._prose(f"{counts} (threshold {diff.threshold_pct:g}%)."),
        ]
        if old.legacy_operators is not None or new.legacy_operators is not None:
            parts.insert(2, self._prose(_legacy_sides(old.legacy_operators or 0, new.legacy_operators or 0)))
        if changed:
            change_rows = [
                (
                    c.change.words,
                    c.kind,
                    self._name(c.label),
                    _num(c.old_after),
                    _num(c.new_after),
                    UNITS.get(c.unit, c.unit),
                    _pct(c.after_change_pct),
                )
                for c in changed[:rows]
            ]
            headers = ["change", "kind", "entry", "old after", "new after", "unit", "after Δ"]
            parts += [self._title(_limited("Changed entries", rows, len(changed))), self._table(headers, change_rows)]
        if diff.model_deltas:
            delta_rows = [
                (d.change.words, self._text(d.section), self._text(d.tuning_name or ""), _num(d.old_after_ms),
                 _num(d.new_after_ms), _pct(d.change_pct))
                for d in diff.model_deltas
            ]  # fmt: skip
            parts += [self._title("Model-level times"),
                      self._table(["change", "section", "tuning name", "old ms", "new ms", "Δ"], delta_rows)]  # fmt: skip
        return "\n\n".join(parts) + "\n"

    def _totals_rows(self, summary: BankSummary) -> list[tuple[str, str]]:
        t = summary.totals
        rows = [
            (
                "operator time saved",
                f"{_num(t.operator_time_saved_us)} µs (median speed-up {_speedup(t.median_operator_speedup)})",
            ),
            (
                "subgraph time saved",
                f"{_num(t.subgraph_time_saved_ms)} ms (median speed-up {_speedup(t.median_subgraph_speedup)})",
            ),
            ("bank hit rate", f"OPAT {_rate(t.opat_repo)}, SGAT {_rate(t.sgat_repo)}"),
            ("unsatisfied", f"OPAT {t.opat_repo.unsatisfied}, SGAT {t.sgat_repo.unsatisfied}"),
            ("failed / incomplete reports", f"{t.failed_reports} / {t.incomplete_reports}"),
            ("failed operators", ", ".join(self._text(name) for name in t.failed_operators) or "none"),
            ("tuning time", f"{_num(t.tuning_time_s)} s" + _missing_time(t.reports_without_tuning_time)),
        ]
        return rows

    def _operator_row(self, e: OperatorEntry) -> Sequence[object]:
        return (
            self._name(e.name), self._text("+".join(e.op_types)), self._text(e.tuning_mode or ""), _num(e.before_us),
            _num(e.after_us), _speedup(e.speedup), _num(e.time_saved_us), e.update_mode.value, e.times_tuned,
            _flags(e.conflict),
        )  # fmt: skip

    def _title(self, text: str) -> str:
        if self.markdown:
            return f"### {text}"
        lines = wrap(text, self.width)
        return "\n".join(lines) + "\n" + "-" * max(len(line) for line in lines)

    def _table(self, headers: Sequence[str], rows: Sequence[Sequence[object]], key_value: bool = False) -> str:
        cells = [[str(cell) for cell in row] for row in rows]
        if self.markdown:
            return tabulate(cells, headers=headers, tablefmt="github", disable_numparse=True)
        return table(None if key_value else headers, cells, self.width)

    def _prose(self, text: str) -> str:
        return wrap_line(text, self.width)

    def _list(self, title: str, items: list[str]) -> list[str]:
        if not items:
            return []
        bullet = "- " if self.markdown else "  "
        room = None if self.width is None else max(self.width - len(bullet), 8)
        shown = (markdown(item, line_start=True) if self.markdown else visible(item) for item in items)
        lines = ("\n".join(bullet + line if i == 0 else " " * len(bullet) + line for i, line in enumerate(wrap(item, room)))
                 for item in shown)  # fmt: skip
        return [self._title(f"{title}: {len(items)}"), "\n".join(lines)]

    def _subgraph_row(self, e: SubgraphEntry) -> Sequence[object]:
        return (self._text(e.repo_key), _num(e.before_ms), _num(e.after_ms), _speedup(e.speedup), _num(e.time_saved_ms),
                e.update_mode.value, e.times_tuned, _flags(e.conflict))  # fmt: skip

    def _text(self, text: str) -> str:
        return markdown(text) if self.markdown else visible(text)

    def _name(self, name: str) -> str:
        name = self._text(name)
        if self.markdown or len(name) <= _NAME_WIDTH:
            return name
        half = (_NAME_WIDTH - 1) // 2
        return f"{name[:half]}…{name[-half:]}"


OPERATOR_HEADERS = ["operator", "op type", "mode", "before µs", "after µs", "speed-up", "saved µs", "update", "tuned", "flag"]
SUBGRAPH_HEADERS = ["repo_key", "before ms", "after ms", "speed-up", "saved ms", "update", "tuned", "flag"]


def _limited(title: str, rows: int, total: int) -> str:
    return f"{title} (top {rows} of {total}; --top N for more)" if total > rows else title


def _flags(conflict: str | None) -> str:
    return "conflict" if conflict else ""


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:,.3f}".rstrip("0").rstrip(".")


def _speedup(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}x"


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:+.2f}%"


def _rate(totals: RepoTotals) -> str:
    rate = totals.hit_rate
    return "n/a" if rate is None else f"{rate:.1%} ({totals.hit}/{totals.total})"


def _legacy_sides(old: int, new: int) -> str:
    return f"legacy Auto Tune: old {count(old, 'entry', 'entries')}, new {count(new, 'entry', 'entries')} (time unit not stated)."


def _missing_time(reports: int) -> str:
    return f" ({count(reports, 'report')} without tuning_time(s): interrupted?)" if reports else ""


UNITS = {"us": "µs", "ms": "ms"}
