"""Compare the results of two sets of result files entry by entry: added, not in new results, improved, regressed, unchanged.

This compares results, not banks: an entry OLD's results hold and NEW's do not was not removed from any bank (AOE
never removes a bank entry); NEW simply did not report it.
"""

from __future__ import annotations

import json
from collections import Counter
from enum import Enum
from typing import Literal

from pydantic import BaseModel, Field

from aoe_runner.report.legacy import label as legacy_label
from aoe_runner.report.models import BankSummary, ModelPoint, operator_label, subgraph_label
from aoe_runner.report.rules import DEFAULT_THRESHOLD_PCT

SCHEMA_VERSION = 2  # 2: "removed" became "not_in_new"


class ChangeKind(str, Enum):
    """How an entry's after-time moved from OLD's results to NEW's."""

    ADDED = "added"  # in NEW's results only
    NOT_IN_NEW = "not_in_new"  # in OLD's results only (called "removed" before schema_version 2)
    IMPROVED = "improved"
    REGRESSED = "regressed"
    UNCHANGED = "unchanged"

    @property
    def words(self) -> str:
        """How a sentence says it; a cell holds the value, the word of every format."""
        return "not in new results" if self is ChangeKind.NOT_IN_NEW else self.value


class EntryChange(BaseModel):
    kind: Literal["operator", "subgraph", "legacy_operator"]
    label: str
    unit: Literal["us", "ms", "unknown"]  # unknown: legacy Auto Tune times, compared only with each other
    change: ChangeKind
    old_before: float | None
    old_after: float | None
    new_before: float | None
    new_after: float | None
    after_change_pct: float | None  # (new after - old after) / old after; negative is faster


class ModelDelta(BaseModel):
    section: Literal["OPAT", "SGAT"]
    tuning_name: str | None
    old_after_ms: float | None
    new_after_ms: float | None
    change_pct: float | None
    change: ChangeKind


class DiffSide(BaseModel):
    files: int
    reports: int
    operators: int
    subgraphs: int
    operator_time_saved_us: float
    subgraph_time_saved_ms: float
    legacy_operators: int | None = Field(
        default=None, exclude_if=lambda value: value is None, description="legacy Auto Tune entries (only when there are)"
    )


class BankDiff(BaseModel):
    """What `aoe-runner report --diff` prints, a results diff; `--format json` emits exactly this.

    It compares the results two sets of files report, not two banks: AOE never removes a bank entry.
    """

    schema_version: int = SCHEMA_VERSION
    threshold_pct: float
    old: DiffSide
    new: DiffSide
    counts: dict[ChangeKind, int]
    changes: list[EntryChange]  # every entry of either side, regressions first
    model_deltas: list[ModelDelta]

    @property
    def regressions(self) -> list[EntryChange]:
        return [c for c in self.changes if c.change is ChangeKind.REGRESSED]


def diff_summaries(old: BankSummary, new: BankSummary, threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> BankDiff:
    changes = (
        _entry_changes("operator", "us", _operators_by_key(old), _operators_by_key(new), threshold_pct)
        + _entry_changes("subgraph", "ms", _subgraphs_by_key(old), _subgraphs_by_key(new), threshold_pct)
        + _entry_changes("legacy_operator", "unknown", _legacy_by_key(old), _legacy_by_key(new), threshold_pct)
    )
    changes.sort(key=_change_rank)
    counts = Counter(c.change for c in changes)
    return BankDiff(
        threshold_pct=threshold_pct,
        old=_side(old),
        new=_side(new),
        counts={kind: counts[kind] for kind in ChangeKind},
        changes=changes,
        model_deltas=_model_deltas(old.model_times, new.model_times, threshold_pct),
    )


def classify(old_value: float | None, new_value: float | None, threshold_pct: float) -> tuple[ChangeKind, float | None]:
    """Classify a time that went from old to new (lower is better); the percentage is None when undefined."""
    if old_value is None:
        return ChangeKind.ADDED, None
    if new_value is None:
        return ChangeKind.NOT_IN_NEW, None
    if old_value <= 0:
        return ChangeKind.UNCHANGED, None
    change_pct = (new_value - old_value) / old_value * 100
    if change_pct > threshold_pct:
        return ChangeKind.REGRESSED, change_pct
    if change_pct < -threshold_pct:
        return ChangeKind.IMPROVED, change_pct
    return ChangeKind.UNCHANGED, change_pct


Times = tuple[float, float]  # before, after
# each entry by its bank key, not by its label: `x [A+B]` labels both the op type "A+B" and the fused ["A", "B"],
# and matching by label let one hide the other's regression
Keyed = dict[tuple[object, ...], tuple[str, Times]]


def _operators_by_key(summary: BankSummary) -> Keyed:
    return {(e.name, tuple(e.op_types), e.tuning_mode): (operator_label(e), (e.before_us, e.after_us)) for e in summary.operators}


def _subgraphs_by_key(summary: BankSummary) -> Keyed:
    return {(e.repo_key,): (subgraph_label(e), (e.before_ms, e.after_ms)) for e in summary.subgraphs}


def _legacy_by_key(summary: BankSummary) -> Keyed:
    return {(legacy_label(e),): (legacy_label(e), (e.before, e.after)) for e in summary.legacy.entries} if summary.legacy else {}


def _labels(keys: set[tuple[object, ...]], old: Keyed, new: Keyed) -> dict[tuple[object, ...], str]:
    """Each entry's label; two entries that one label would name are told apart by their op types, as JSON."""
    labels = {key: (old.get(key) or new[key])[0] for key in keys}
    shared = {label for label, uses in Counter(labels.values()).items() if uses > 1}
    for key, label in labels.items():
        if label in shared and len(key) == 3:
            labels[key] = f"{label} (op types {json.dumps(list(key[1]), ensure_ascii=False)})"  # type: ignore[call-overload]
    return labels


def _entry_changes(
    kind: Literal["operator", "subgraph", "legacy_operator"],
    unit: Literal["us", "ms", "unknown"],
    old: Keyed,
    new: Keyed,
    threshold_pct: float,
) -> list[EntryChange]:
    changes = []
    keys = old.keys() | new.keys()
    labels = _labels(keys, old, new)
    for key in keys:
        old_times, new_times = old[key][1] if key in old else None, new[key][1] if key in new else None
        label = labels[key]
        change, pct = classify(old_times and old_times[1], new_times and new_times[1], threshold_pct)
        changes.append(
            EntryChange(
                kind=kind,
                label=label,
                unit=unit,
                change=change,
                old_before=old_times and old_times[0],
                old_after=old_times and old_times[1],
                new_before=new_times and new_times[0],
                new_after=new_times and new_times[1],
                after_change_pct=pct,
            )
        )
    return changes


_RANK_ORDER = [ChangeKind.REGRESSED, ChangeKind.IMPROVED, ChangeKind.ADDED, ChangeKind.NOT_IN_NEW, ChangeKind.UNCHANGED]


def _change_rank(change: EntryChange) -> tuple[int, float, str]:
    return (_RANK_ORDER.index(change.change), -abs(change.after_change_pct or 0.0), change.label)


def _model_deltas(old: list[ModelPoint], new: list[ModelPoint], threshold_pct: float) -> list[ModelDelta]:
    """Match the latest model-level times of each (section, tuning name) on both sides."""
    old_latest = {(p.section, p.tuning_name): p for p in old}  # lists are in time order: the last one wins
    new_latest = {(p.section, p.tuning_name): p for p in new}
    deltas = []
    for section, name in sorted(old_latest.keys() | new_latest.keys(), key=lambda k: (k[0], k[1] or "")):
        before, after = old_latest.get((section, name)), new_latest.get((section, name))
        old_ms = before.after_ms if before else None
        new_ms = after.after_ms if after else None
        change, pct = classify(old_ms, new_ms, threshold_pct)
        deltas.append(
            ModelDelta(section=section, tuning_name=name, old_after_ms=old_ms, new_after_ms=new_ms, change_pct=pct, change=change)
        )
    return deltas


def _side(summary: BankSummary) -> DiffSide:
    totals = summary.totals
    return DiffSide(
        files=totals.files,
        reports=totals.reports,
        operators=totals.operators,
        subgraphs=totals.subgraphs,
        operator_time_saved_us=totals.operator_time_saved_us,
        subgraph_time_saved_ms=totals.subgraph_time_saved_ms,
        legacy_operators=summary.legacy.operators if summary.legacy else None,
    )
