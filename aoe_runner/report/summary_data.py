"""The bank summary of a merged BankState as plain data, in models.BankSummary's field order.

`--format json` writes this data straight (render/json_format.py), taking it from summary_parts and making the
operators' rows a batch at a time as it writes them; tables, csv, diffs and library callers get the pydantic model
built from it (`bank_summary`, `summary_of`). Every figure is computed as the reference merge computes it
(tests/report/oracle.py), in the same order, so that sums of floats come out the same to the last bit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aoe_runner.report.entries import Entry, Table, exact_sum
from aoe_runner.report.merge import BankState, FileRow
from aoe_runner.report.rules import DEFAULT_MIN_GAIN_PCT, SUMMARY_SCHEMA_VERSION
from aoe_runner.results.report_facts import REPO_FIELDS


def summary_data(state: BankState, min_gain_pct: float) -> dict[str, Any]:
    data, operators = summary_parts(state, min_gain_pct)
    data["operators"] = operator_rows(operators)
    return data


def summary_parts(state: BankState, min_gain_pct: float) -> tuple[dict[str, Any], list[Entry]]:
    """The summary data but its operators' rows (an empty list in their place), and the operators in rank order, whose
    rows operator_rows() makes: the JSON writer makes them a few hundred at a time, each batch written while it is
    still in the CPU's cache, and the memory of one batch reused for the next."""
    threshold = 1 + min_gain_pct / 100
    operators = _Listing(threshold)
    ranked = _ranked(state.operators, _operator_rank)
    for entry in ranked:
        operators.add_operator(entry)
    subgraphs = _Listing(threshold)
    for entry in _ranked(state.subgraphs, _subgraph_rank):
        subgraphs.add_subgraph(entry)
    files = sorted(state.files, key=_path)
    points = sorted(state.model_points, key=lambda point: point.source.order())
    data: dict[str, Any] = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "min_gain_pct": float(min_gain_pct),
        "totals": _totals(state, operators, subgraphs, files),
        "operators": [],
        "subgraphs": subgraphs.rows,
        "op_types": operators.op_type_stats(),
        "model_times": [
            {
                "section": p.section,
                "tuning_name": p.tuning_name,
                "before_ms": p.before,
                "after_ms": p.after,
                "speedup": _speedup(p.before, p.after),
                "source": p.source.provenance(),
            }
            for p in points
        ],
        "no_real_gain": operators.below + subgraphs.below,
        "conflicts": operators.conflicts + subgraphs.conflicts,
        "files": [row.data() for row in files],
    }
    legacy = state.legacy.summary(min_gain_pct) if state.legacy is not None else None
    if legacy is not None:
        data["legacy"] = legacy
    return data, ranked


def operator_rows(operators: list[Entry]) -> list[dict[str, Any]]:
    """The operators' rows of the summary data, in the order given: one dict literal each, in the field order, so
    that the dict is sized once."""
    rows: list[dict[str, Any]] = []
    for e in operators:
        before, after, types = e.before, e.after, e.types
        rows.append(
            {
                "update_mode": "update" if e.update else "add",
                "improvement_raw": e.raw,
                "speedup": _speedup(before, after),
                "times_tuned": e.tuned,
                "source": e.latest.provenance(),
                "conflict": e.conflict(),
                "name": e.key,
                "op_types": [types] if isinstance(types, str) else list(types),  # type: ignore[call-overload]
                "tuning_mode": e.mode,
                "before_us": before,
                "after_us": after,
                "time_saved_us": before - after,
            }
        )
    return rows


def summary_of(state: BankState, min_gain_pct: float = DEFAULT_MIN_GAIN_PCT) -> Any:
    """The state's summary as the pydantic models.BankSummary."""
    return bank_summary(summary_data(state, min_gain_pct))


def bank_summary(data: dict[str, Any]) -> Any:
    """The pydantic model of summary data (for tables, csv, diffs and library callers)."""
    from aoe_runner.report.models import BankSummary

    return BankSummary.model_validate(data)


def operator_label(e: dict[str, Any]) -> str:
    """summary.operator_label for an entry as plain data."""
    return _operator_label(e["name"], "+".join(e["op_types"]), e["tuning_mode"])


def _operator_label(name: str, joined_types: str, mode: str | None) -> str:
    return f"{name} [{joined_types}] ({mode})" if mode else f"{name} [{joined_types}]"  # one string made, not two


def _speedup(before: float, after: float) -> float | None:
    return before / after if after > 0 else None


def _path(row: FileRow) -> str:
    return row.path


def _ranked(table: Table, rank: Any) -> list[Entry]:
    """table.entries sorted by `rank`, whose first item is minus the time saved: sorted by that float alone (the
    sort compares floats fast), then each run of equal floats by the whole rank. The same order as sorted(key=rank),
    which a NaN would make ill-defined: with one, that is the sort."""
    entries = table.entries
    saved = [-(e.before - e.after) for e in entries]
    if any(value != value for value in saved):
        return sorted(entries, key=rank)
    order = sorted(range(len(entries)), key=saved.__getitem__)
    ranked = [entries[index] for index in order]
    start = 0
    for end in range(1, len(order) + 1):
        if end == len(order) or saved[order[end]] != saved[order[start]]:
            if end - start > 1:
                ranked[start:end] = sorted(ranked[start:end], key=rank)
            start = end
    return ranked


def _operator_rank(e: Entry) -> tuple[float, str, tuple[str, ...], str, bool]:
    types = e.types
    return (-(e.before - e.after), e.key, (types,) if isinstance(types, str) else types, e.mode or "", e.mode is None)  # type: ignore[return-value]


def _subgraph_rank(e: Entry) -> tuple[float, str]:
    return (-(e.before - e.after), e.key)


_SUBGRAPH_FIELDS = (
    "update_mode",
    "improvement_raw",
    "speedup",
    "times_tuned",
    "source",
    "conflict",
    "repo_key",
    "before_ms",
    "after_ms",
    "time_saved_ms",
)


class _Listing:
    """What the summary says of a table's entries, gathered in rank order in one pass over their attributes: counts,
    time saved (summed in order, as the reference sums it), speed-ups for the medians, the labels below the gain
    threshold and in conflict, the operators' op-type groups, and the subgraphs' rows (the operators' rows are
    operator_rows', made apart)."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.rows: list[dict[str, Any]] = []  # subgraphs' (operators' are operator_rows')
        self.added = 0
        self.saved: list[float] = []
        self.speedups: list[float] = []
        self.below: list[str] = []
        self.conflicts: list[str] = []
        self.groups: dict[str, tuple[list[float], list[float]]] = {}  # op type label: time saved, speed-ups

    def add_operator(self, e: Entry) -> None:
        """Count an operator (its row is operator_rows'), and group it by its op types."""
        types, mode = e.types, e.mode
        saved = e.before - e.after
        speedup = self._count(e, saved)
        joined = types if isinstance(types, str) else "+".join(types)  # type: ignore[arg-type]  # a fused operator's types
        label = joined or "(none)"
        group = self.groups.get(label)
        if group is None:
            group = self.groups[label] = ([], [])
        group[0].append(saved)
        if speedup is not None:
            group[1].append(speedup)
        below = speedup is not None and speedup < self.threshold
        conflict = e.in_conflict()
        if below or conflict:
            named = _operator_label(e.key, joined, mode)
            if below:
                self.below.append(named)
            if conflict:
                self.conflicts.append(named)

    def add_subgraph(self, e: Entry) -> None:
        before, after = e.before, e.after
        saved = before - after
        speedup, conflict = self._count(e, saved), e.conflict()
        update_mode = "update" if e.update else "add"
        values = (update_mode, e.raw, speedup, e.tuned, e.latest.provenance(), conflict, e.key, before, after, saved)
        self.rows.append(dict(zip(_SUBGRAPH_FIELDS, values, strict=True)))  # few rows: by name, not a literal
        if speedup is not None and speedup < self.threshold:
            self.below.append(f"subgraph {e.key}")
        if conflict is not None:
            self.conflicts.append(f"subgraph {e.key}")

    def _count(self, e: Entry, saved: float) -> float | None:
        """Count an entry (added or updated, its time saved and speed-up): its speed-up."""
        speedup = _speedup(e.before, e.after)
        if not e.update:
            self.added += 1
        self.saved.append(saved)
        if speedup is not None:
            self.speedups.append(speedup)
        return speedup

    @property
    def count(self) -> int:
        return len(self.saved)  # one time saved per entry counted

    @property
    def updated(self) -> int:
        return self.count - self.added  # update_mode is add or update

    @property
    def time_saved(self) -> float:
        return float(sum(self.saved))

    def op_type_stats(self) -> list[dict[str, Any]]:
        stats = [
            {"op_type": op_type, "entries": len(saved), "time_saved_us": float(sum(saved)), "median_speedup": _median(speedups)}
            for op_type, (saved, speedups) in self.groups.items()
        ]
        return sorted(stats, key=lambda s: (-s["time_saved_us"], s["op_type"]))


def _totals(state: BankState, operators: _Listing, subgraphs: _Listing, files: list[FileRow]) -> dict[str, Any]:
    opat, sgat = _repo_totals(state.repo["OPAT"]), _repo_totals(state.repo["SGAT"])
    return {
        "files": len(files),
        "partial_files": sum(row.partial for row in files),
        "reports": sum(row.reports for row in files),
        "operators": operators.count,
        "operators_added": operators.added,
        "operators_updated": operators.updated,
        "subgraphs": subgraphs.count,
        "subgraphs_added": subgraphs.added,
        "subgraphs_updated": subgraphs.updated,
        "operator_time_saved_us": operators.time_saved,
        "subgraph_time_saved_ms": subgraphs.time_saved,
        "median_operator_speedup": _median(operators.speedups),
        "median_subgraph_speedup": _median(subgraphs.speedups),
        "opat_repo": opat,
        "sgat_repo": sgat,
        "opat_hit_rate": opat["hit"] / opat["total"] if opat["total"] else None,
        "sgat_hit_rate": sgat["hit"] / sgat["total"] if sgat["total"] else None,
        "failed_reports": state.status_counts.get("failed", 0),
        "incomplete_reports": state.status_counts.get("incomplete", 0),
        "failed_operators": sorted(state.failed_operators),
        "tuning_time_s": exact_sum(state.tuning_times),
        "reports_without_tuning_time": state.without_tuning_time,
    }


def _repo_totals(values: list[int]) -> dict[str, int]:
    return dict(zip(("reports", *REPO_FIELDS), values, strict=True))


def largest_magnitude(entries: list[dict[str, Any]], names: list[str]) -> float:
    """The largest absolute value of the entries' float fields `names`, NaN aside: json_format's check for floats
    written with an exponent, here to be compiled with this module (one pass, instead of one per field)."""
    largest = 0.0
    for entry in entries:
        for name in names:
            value = entry[name]
            if type(value) is float and (value > largest or -value > largest):
                largest = abs(value)
    return largest


def _median(values: Iterable[float | None]) -> float | None:
    """statistics.median (the reference's), without loading statistics, decimal and fractions for it."""
    present = sorted(v for v in values if v is not None)
    if not present:
        return None
    middle = len(present) // 2
    return present[middle] if len(present) % 2 else (present[middle - 1] + present[middle]) / 2
