"""The legacy Auto Tune part of a bank summary: kept apart because its times are in a unit no file states.

Entries merge as AOE's do (one per operator or fused group, the latest result wins, a later result slower
than an earlier one from another file is a conflict), but their times are only ever compared and summed
with each other: never with µs or ms figures.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from aoe_runner.report.rules import CONFLICT_TOLERANCE
from aoe_runner.results.legacy import display_name
from aoe_runner.results.model import LegacyOperator, LegacySection, UpdateMode

_COUNTS = ("add", "hit", "reserved", "update", "unsatisfied", "total")

Order = tuple[tuple[datetime, str, int], int]  # the report's order, then the entry's position in it


class _Context(Protocol):
    """Where a report came from (as the merge's Source says it)."""

    file: str
    timestamp: datetime | None
    order: tuple[datetime, str, int]


class LegacyEntry(BaseModel):
    name: str = Field(description="the entry's key as the file writes it")
    members: list[str] = Field(description="the operator names in the key; several for a fused group")
    unit: Literal["unknown"] = "unknown"
    before: float
    after: float
    time_saved: float
    speedup: float | None
    update_mode: UpdateMode
    times_tuned: int
    file: str
    timestamp: datetime | None
    conflict: str | None = None


class LegacyBankCounts(BaseModel):
    """Sums over every entry's bank flags: bank_append is add, bank_hit hit, bank_reserved reserved,
    bank_update update; unsatisfied entries have no flag set; total counts every entry."""

    add: int = 0
    hit: int = 0
    reserved: int = 0
    update: int = 0
    unsatisfied: int = 0
    total: int = 0
    status_only: int = Field(default=0, description="entries with status_data and no result_data")


class LegacySummary(BaseModel):
    """Legacy Auto Tune files (CANN 5.x and earlier): their times have no stated unit, so they are never added to µs."""

    unit: Literal["unknown"] = "unknown"
    files: int
    operators: int
    operators_added: int
    operators_updated: int
    time_saved: float = Field(description="in the files' own unit, which they do not state")
    median_speedup: float | None
    bank: LegacyBankCounts
    entries: list[LegacyEntry] = Field(description="sorted by time saved, largest first")
    no_real_gain: list[str] = Field(description="entries whose speed-up is below the summary's min_gain_pct")
    conflicts: list[str] = Field(description="entries whose latest result contradicts an earlier one")


@dataclass(slots=True)
class _State:
    latest_order: Order
    latest: LegacyOperator
    latest_file: str
    latest_timestamp: datetime | None
    fastest: tuple[float, Order]
    fastest_file: str
    times_tuned: int = 1

    def absorb(self, other: _State) -> None:
        self.times_tuned += other.times_tuned
        if other.latest_order > self.latest_order:
            self.latest_order, self.latest = other.latest_order, other.latest
            self.latest_file, self.latest_timestamp = other.latest_file, other.latest_timestamp
        if other.fastest < self.fastest:
            self.fastest, self.fastest_file = other.fastest, other.fastest_file

    def entry(self) -> LegacyEntry:
        op = self.latest
        return LegacyEntry(
            name=op.name,
            members=list(op.members),
            before=op.before,
            after=op.after,
            time_saved=op.time_saved,
            speedup=op.speedup,
            update_mode=op.update_mode,
            times_tuned=self.times_tuned,
            file=self.latest_file,
            timestamp=self.latest_timestamp,
            conflict=self._conflict(),
        )

    def _conflict(self) -> str | None:
        fastest_after, latest_after = self.fastest[0], self.latest.after
        if self.fastest_file == self.latest_file or latest_after <= fastest_after * (1 + CONFLICT_TOLERANCE):
            return None
        return f"latest result {latest_after:g} is slower than {fastest_after:g} recorded in {self.fastest_file}"


class LegacyMerger:
    """Folds the legacy sections of many reports into one LegacySummary; commutative, like the merge of AOE entries."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, ...], _State] = {}
        self._files: set[str] = set()
        self._counts = dict.fromkeys(_COUNTS, 0)
        self._status_only = 0

    def add(self, section: LegacySection, context: _Context) -> None:
        self._files.add(context.file)
        for name in _COUNTS:
            self._counts[name] += getattr(section.repo_summary, name) or 0
        self._status_only += section.status_only
        for position, op in enumerate(section.operators):
            order = (context.order, position)
            state = self._entries.get(op.members)
            if state is None:
                self._entries[op.members] = _State(order, op, context.file, context.timestamp, (op.after, order), context.file)
            else:
                state.absorb(_State(order, op, context.file, context.timestamp, (op.after, order), context.file))

    def absorb(self, other: LegacyMerger) -> None:
        for key, state in other._entries.items():
            if key in self._entries:
                self._entries[key].absorb(state)
            else:
                self._entries[key] = state
        self._files |= other._files
        for name in _COUNTS:
            self._counts[name] += other._counts[name]
        self._status_only += other._status_only

    def summary(self, min_gain_pct: float) -> LegacySummary | None:
        if not self._files:
            return None
        entries = sorted((state.entry() for state in self._entries.values()), key=lambda e: (-e.time_saved, e.name))
        threshold = 1 + min_gain_pct / 100
        return LegacySummary(
            files=len(self._files),
            operators=len(entries),
            operators_added=sum(e.update_mode is UpdateMode.ADD for e in entries),
            operators_updated=sum(e.update_mode is UpdateMode.UPDATE for e in entries),
            time_saved=sum(e.time_saved for e in entries),
            median_speedup=_median(e.speedup for e in entries),
            bank=LegacyBankCounts(**self._counts, status_only=self._status_only),
            entries=entries,
            no_real_gain=[label(e) for e in entries if e.speedup is not None and e.speedup < threshold],
            conflicts=[label(e) for e in entries if e.conflict],
        )


def label(entry: LegacyEntry) -> str:
    """How an entry is named in lists and diffs: its operator names, joined with + for a fused group."""
    return display_name(tuple(entry.members))


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None
