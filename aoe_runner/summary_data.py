"""The bank summary of a merged BankState as plain data, in summary.BankSummary's field order.

`--format json` writes this data straight (render/json_format.py); tables, csv, diffs and library callers get the
pydantic model built from it (`bank_summary`). Every figure is computed as summary.BankMerger computes it, in
the same order, so that sums of floats come out the same to the last bit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aoe_runner.merge import BankState, Entry, FileRow, Table
from aoe_runner.results.report_facts import REPO_FIELDS

SCHEMA_VERSION = 1  # summary.SCHEMA_VERSION


def summary_data(state: BankState, min_gain_pct: float) -> dict[str, Any]:
    operators = [_operator(entry) for entry in _ranked(state.operators, _operator_rank)]
    subgraphs = [_subgraph(entry) for entry in _ranked(state.subgraphs, _subgraph_rank)]
    operator_figures, subgraph_figures = _Figures(operators, "time_saved_us"), _Figures(subgraphs, "time_saved_ms")
    threshold = 1 + min_gain_pct / 100
    files = sorted(state.files, key=_path)
    points = sorted(state.model_points, key=lambda point: point.source.order())
    data: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "min_gain_pct": float(min_gain_pct),
        "totals": _totals(state, operator_figures, subgraph_figures, files),
        "operators": operators,
        "subgraphs": subgraphs,
        "op_types": _op_type_stats(operators),
        "model_times": [
            {
                "section": p.section,
                "tuning_name": p.tuning_name,
                "before_ms": p.before,
                "after_ms": p.after,
                "speedup": p.before / p.after if p.after > 0 else None,
                "source": p.source.provenance(),
            }
            for p in points
        ],
        "no_real_gain": [operator_label(e) for e in operators if _below(e, threshold)]
        + [_subgraph_label(e) for e in subgraphs if _below(e, threshold)],
        "conflicts": [operator_label(e) for e in operators if e["conflict"]]
        + [_subgraph_label(e) for e in subgraphs if e["conflict"]],
        "files": [row.data() for row in files],
    }
    legacy = state.legacy.summary(min_gain_pct) if state.legacy is not None else None
    if legacy is not None:
        data["legacy"] = legacy
    return data


def bank_summary(data: dict[str, Any]) -> Any:
    """The pydantic model of summary data (for tables, csv, diffs and library callers)."""
    from aoe_runner.summary import BankSummary

    return BankSummary.model_validate(data)


def operator_label(e: dict[str, Any]) -> str:
    """summary.operator_label for an entry as plain data."""
    mode = f" ({e['tuning_mode']})" if e["tuning_mode"] else ""
    return f"{e['name']} [{'+'.join(e['op_types'])}]{mode}"


def _subgraph_label(e: dict[str, Any]) -> str:
    return f"subgraph {e['repo_key']}"


def _below(e: dict[str, Any], threshold: float) -> bool:
    speedup = e["speedup"]
    return speedup is not None and speedup < threshold  # type: ignore[no-any-return]


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


def _operator_rank(e: Entry) -> tuple[float, str, tuple[str, ...], str]:
    types = e.types
    return (-(e.before - e.after), e.key, (types,) if isinstance(types, str) else types, e.mode or "")  # type: ignore[return-value]


def _subgraph_rank(e: Entry) -> tuple[float, str]:
    return (-(e.before - e.after), e.key)


def _common(e: Entry) -> dict[str, Any]:
    return {
        "update_mode": "update" if e.update else "add",
        "improvement_raw": e.raw,
        "speedup": e.before / e.after if e.after > 0 else None,
        "times_tuned": e.tuned,
        "source": e.latest.provenance(),
        "conflict": e.conflict(),
    }


def _operator(e: Entry) -> dict[str, Any]:
    entry = _common(e)
    types = e.types
    entry["name"] = e.key
    entry["op_types"] = [types] if isinstance(types, str) else list(types)  # type: ignore[call-overload]
    entry["tuning_mode"] = e.mode
    entry["before_us"] = e.before
    entry["after_us"] = e.after
    entry["time_saved_us"] = e.before - e.after
    return entry


def _subgraph(e: Entry) -> dict[str, Any]:
    entry = _common(e)
    entry["repo_key"] = e.key
    entry["before_ms"] = e.before
    entry["after_ms"] = e.after
    entry["time_saved_ms"] = e.before - e.after
    return entry


class _Figures:
    """What the totals say of a list of entries, in one pass: counts, time saved (summed in order, as the reference
    sums it) and the median speed-up."""

    def __init__(self, entries: list[dict[str, Any]], saved_field: str) -> None:
        added = 0
        saved: list[float] = []
        speedups: list[float] = []
        for e in entries:
            if e["update_mode"] == "add":
                added += 1
            saved.append(e[saved_field])
            speedup = e["speedup"]
            if speedup is not None:
                speedups.append(speedup)
        self.count = len(entries)
        self.added = added
        self.updated = self.count - added  # update_mode is add or update
        self.time_saved = float(sum(saved))
        self.median_speedup = _median(speedups)


def _totals(state: BankState, operators: _Figures, subgraphs: _Figures, files: list[FileRow]) -> dict[str, Any]:
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
        "median_operator_speedup": operators.median_speedup,
        "median_subgraph_speedup": subgraphs.median_speedup,
        "opat_repo": opat,
        "sgat_repo": sgat,
        "opat_hit_rate": opat["hit"] / opat["total"] if opat["total"] else None,
        "sgat_hit_rate": sgat["hit"] / sgat["total"] if sgat["total"] else None,
        "failed_reports": state.status_counts.get("failed", 0),
        "incomplete_reports": state.status_counts.get("incomplete", 0),
        "failed_operators": sorted(state.failed_operators),
        "tuning_time_s": state.tuning_time,
        "reports_without_tuning_time": state.without_tuning_time,
    }


def _repo_totals(values: list[int]) -> dict[str, int]:
    return dict(zip(("reports", *REPO_FIELDS), values, strict=True))


def _op_type_stats(operators: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for entry in operators:
        types: list[str] = entry["op_types"]
        label = types[0] if len(types) == 1 else "+".join(types)  # a fused operator's types joined
        groups.setdefault(label or "(none)", []).append(entry)
    stats = [
        {
            "op_type": op_type,
            "entries": len(members),
            "time_saved_us": float(sum(e["time_saved_us"] for e in members)),
            "median_speedup": _median(e["speedup"] for e in members),
        }
        for op_type, members in groups.items()
    ]
    return sorted(stats, key=lambda s: (-s["time_saved_us"], s["op_type"]))


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
