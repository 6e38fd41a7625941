"""A bank entry (an operator or a subgraph) and the table of them, merged record by record.

One dictionary lookup by the entry's name per record, each entry's state an object updated in place, provenance
built once per report and only for the entries it wins. Merging is commutative: tables from worker processes and
from the cache fold into one. Plain typed Python that mypyc can compile (setup.py); the pure module is the fallback.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from aoe_runner.report.rules import CONFLICT_TOLERANCE
from aoe_runner.results.parsed import Columns, types_of
from aoe_runner.results.report_facts import ReportFacts, moment_of


class Source:
    """One report: where its records came from, and its place in the order of all reports."""

    def __init__(self, file: str, key: str | None, index: int, timestamp: int | None, timestamp_source: str) -> None:
        self.file = file
        self.key = key
        self.index = index
        self.timestamp = timestamp
        self.timestamp_source = timestamp_source
        self.time: int = timestamp if timestamp is not None else 0  # the order: time, then file, then index
        self._provenance: dict[str, Any] | None = None

    @classmethod
    def of(cls, file: str, facts: ReportFacts) -> Source:
        return cls(file, facts.key, facts.index, facts.timestamp, facts.timestamp_source)

    def later_than(self, other: Source) -> bool:
        if self.time != other.time:
            return self.time > other.time
        if self.file != other.file:
            return self.file > other.file
        return self.index > other.index

    def provenance(self) -> dict[str, Any]:
        if self._provenance is None:
            self._provenance = {
                "file": self.file,
                "report_key": self.key,
                "report_index": self.index,
                "timestamp": moment_of(self.timestamp),
                "timestamp_source": self.timestamp_source,
            }
        return self._provenance

    def order(self) -> tuple[int, str, int]:
        return (self.time, self.file, self.index)

    def wire(self) -> list[Any]:
        return [self.file, self.key, self.index, self.timestamp, self.timestamp_source]

    def legacy_context(self) -> Any:
        """What legacy.LegacyMerger reads of a report (its order with a datetime, as the reference merge's)."""
        return _LegacyContext(self.file, moment_of(self.timestamp), (moment_of(self.time) or datetime.min, self.file, self.index))

    def __reduce__(self) -> Any:
        return (Source, (self.file, self.key, self.index, self.timestamp, self.timestamp_source))


class _LegacyContext:
    def __init__(self, file: str, timestamp: datetime | None, order: tuple[datetime, str, int]) -> None:
        self.file, self.timestamp, self.order = file, timestamp, order


class Entry:
    """One bank entry: its latest result (before, after, update, raw figure, where) and its fastest after-time."""

    def __init__(
        self,
        key: str,
        types: object,
        mode: str | None,
        source: Source,
        position: int,
        before: float,
        after: float,
        update: bool,
        raw: str | None,
    ) -> None:
        self.key = key
        self.types = types
        self.mode = mode
        self.tuned = 1
        self.latest = source
        self.latest_position = position
        self.before = before
        self.after = after
        self.update = update
        self.raw = raw
        self.fastest = source
        self.fastest_position = position
        self.fastest_after = after

    def absorb(self, other: Entry) -> None:
        """Fold in the same entry as seen by another state (other files)."""
        self.tuned += other.tuned
        if _earlier(self.latest, self.latest_position, other.latest, other.latest_position):
            self.latest, self.latest_position = other.latest, other.latest_position
            self.before, self.after, self.update, self.raw = other.before, other.after, other.update, other.raw
        self.observe_fastest(other.fastest, other.fastest_position, other.fastest_after)

    def observe_fastest(self, source: Source, position: int, after: float) -> None:
        """Keep the fastest after-time seen; of two equal ones, the earlier record's."""
        fastest_after = self.fastest_after
        if after < fastest_after or (after == fastest_after and _earlier(source, position, self.fastest, self.fastest_position)):
            self.fastest, self.fastest_position, self.fastest_after = source, position, after

    def in_conflict(self) -> bool:
        """Is the latest result slower, beyond the tolerance, than a faster one another file recorded?"""
        fastest = self.fastest
        if fastest is self.latest:
            return False
        return fastest.file != self.latest.file and not self.after <= self.fastest_after * (1 + CONFLICT_TOLERANCE)  # NaN: yes

    def conflict(self) -> str | None:
        """What the summary says of a conflict (in_conflict), or None."""
        if not self.in_conflict():
            return None
        # printf-style: the text of f"{after:g}", and cheaper compiled than str.format or format() twice
        return "latest result %g is slower than %g recorded in %s" % (self.after, self.fastest_after, self.fastest.file)  # noqa: UP031


def exact_sum(values: list[float]) -> float:
    """The sum of `values`, the same in whatever order they come (tests/report/oracle.py's reference sums with it too): exactly
    rounded (math.fsum); a sum that overflows or meets inf and -inf, added in sorted order."""
    try:
        return math.fsum(values)
    except (OverflowError, ValueError):
        return float(sum(sorted(values)))


def _earlier(a: Source, a_position: int, b: Source, b_position: int) -> bool:
    if a is b:
        return a_position < b_position
    return b.later_than(a) or (a.order() == b.order() and a_position < b_position)


class Table:
    """Bank entries of one kind; a name's first variant is found by the name alone, its others by the whole key."""

    def __init__(self) -> None:
        self.first: dict[str, Entry] = {}  # name (or repo_key) -> its first (types, mode) variant
        self.variants: dict[tuple[str, object, str | None], Entry] = {}  # its other variants
        self.entries: list[Entry] = []

    def __len__(self) -> int:
        return len(self.entries)

    def find(self, key: str, types: object, mode: str | None) -> Entry | None:
        entry = self.first.get(key)
        if entry is None or (entry.types == types and entry.mode == mode):
            return entry
        return self.variants.get((key, types, mode))

    def insert(self, entry: Entry) -> None:
        if self.first.setdefault(entry.key, entry) is not entry:  # one lookup: the name's first variant is another
            self.variants[(entry.key, entry.types, entry.mode)] = entry
        self.entries.append(entry)

    def merge(self, columns: Columns, sources: list[Source], strings: dict[object, Any], start: int = 0) -> None:
        """Observe every record of one file's columns from row `start` on: the hot loop of `report`."""
        first = self.first
        keys, kinds, modes, befores, afters = columns.keys, columns.types, columns.modes, columns.before, columns.after
        updates, raws, reports = columns.update, columns.raw, columns.report
        intern = strings.setdefault
        for position in range(start, len(keys)):
            key = keys[position]
            types = kinds[position]
            mode = modes[position]
            source = sources[reports[position]]
            after = afters[position]
            entry = first.get(key)
            if entry is None or entry.types != types or entry.mode != mode:
                entry = self.find(key, types, mode)
                if entry is None:
                    raw = raws[position]
                    self.insert(
                        Entry(
                            key,
                            intern(types, types),
                            intern(mode, mode),
                            source,
                            position,
                            befores[position],
                            after,
                            updates[position],
                            intern(raw, raw),
                        )
                    )
                    continue
            entry.tuned += 1
            held = entry.latest
            if held is source or source.later_than(held):
                raw = raws[position]
                entry.latest = source
                entry.latest_position = position
                entry.before = befores[position]
                entry.after = after
                entry.update = updates[position]
                entry.raw = intern(raw, raw)
            entry.observe_fastest(source, position, after)

    def merge_typed(
        self, operator_lists: list[list[Any]], sources: list[Source], strings: dict[object, Any], start: int, spend: bool
    ) -> int:
        """merge() for a typed file's checked records (parsed.RawRecords), read from the decoded structs as they are:
        the same entries and positions as merging them in columns (`start`: the position of the first); the position
        after the last. The per-record steps are merge()'s, written out again rather than shared: this is the hot
        loop, kept free of calls per record. With `spend`, each record leaves its list as it is merged."""
        first = self.first
        intern = strings.setdefault
        position = start
        for number in range(len(operator_lists)):
            source = sources[number]
            records = operator_lists[number]
            for index in range(len(records)):
                record = records[index]
                if spend:
                    records[index] = None  # freed when `record` moves on, while still in the CPU's cache
                key: str = record.op_name
                op_type: object = record.op_type
                types: object = op_type if isinstance(op_type, str) else types_of(op_type)  # type: ignore[arg-type]
                performances: dict[str, Any] = record.tune_performance
                for mode, perf in performances.items():
                    after: float = perf.after
                    entry = first.get(key)
                    if entry is None or entry.types != types or entry.mode != mode:
                        entry = self.find(key, types, mode)
                        if entry is None:
                            update = perf.update_mode == "update"
                            entry = Entry(
                                key,
                                intern(types, types),
                                intern(mode, mode),
                                source,
                                position,
                                perf.before,
                                after,
                                update,
                                perf.improvement,
                            )
                            self.insert(entry)
                            position += 1
                            continue
                    entry.tuned += 1
                    held = entry.latest
                    if held is source or source.later_than(held):
                        entry.latest = source
                        entry.latest_position = position
                        entry.before = perf.before
                        entry.after = after
                        entry.update = perf.update_mode == "update"
                        entry.raw = perf.improvement
                    entry.observe_fastest(source, position, after)
                    position += 1
        return position

    def absorb(self, other: Table) -> None:
        for entry in other.entries:
            mine = self.find(entry.key, entry.types, entry.mode)
            if mine is None:
                self.insert(entry)
            else:
                mine.absorb(entry)

    def to_wire(self, source_ids: dict[int, int]) -> list[Any]:
        """The entries in columns, their op types, modes and raw figures as indices into tables of the distinct
        values: a cached state is read back with one object per distinct value, not one per entry."""
        entries = self.entries
        types, type_ids = _indexed([e.types for e in entries])
        modes, mode_ids = _indexed([e.mode for e in entries])
        raws, raw_ids = _indexed([e.raw for e in entries])
        return [
            [e.key for e in entries],
            types,
            type_ids,
            modes,
            mode_ids,
            raws,
            raw_ids,
            [e.tuned for e in entries],
            [source_ids[id(e.latest)] for e in entries],
            [e.latest_position for e in entries],
            [e.before for e in entries],
            [e.after for e in entries],
            [e.update for e in entries],
            [source_ids[id(e.fastest)] for e in entries],
            [e.fastest_position for e in entries],
            [e.fastest_after for e in entries],
        ]

    @classmethod
    def from_wire(cls, wire: list[Any], sources: list[Source], strings: dict[object, Any]) -> Table:
        """Raises ValueError, TypeError or IndexError for columns to_wire did not write."""
        table = cls()
        intern = strings.setdefault
        if len(wire) != 16:
            raise ValueError("not a table's columns")
        # typed, so that compiled code indexes them as lists (and refuses anything else)
        keys: list[Any] = wire[0]
        type_values: list[Any] = wire[1]
        type_ids: list[Any] = wire[2]
        mode_values: list[Any] = wire[3]
        mode_ids: list[Any] = wire[4]
        raw_values: list[Any] = wire[5]
        raw_ids: list[Any] = wire[6]
        tuned: list[Any] = wire[7]
        latest: list[Any] = wire[8]
        latest_positions: list[Any] = wire[9]
        befores: list[Any] = wire[10]
        afters: list[Any] = wire[11]
        updates: list[Any] = wire[12]
        fastest: list[Any] = wire[13]
        fastest_positions: list[Any] = wire[14]
        fastest_afters: list[Any] = wire[15]
        count = len(keys)
        columns = (type_ids, mode_ids, raw_ids, tuned, latest, latest_positions, befores, afters, updates, fastest)
        if any(len(column) != count for column in (*columns, fastest_positions, fastest_afters)):
            raise ValueError("columns of different lengths")
        kinds = [intern(kind, kind) for kind in (tuple(t) if isinstance(t, list) else t for t in type_values)]
        modes = [intern(mode, mode) for mode in mode_values]
        raws = [intern(raw, raw) for raw in raw_values]
        for row in range(count):
            entry = Entry(
                keys[row],
                kinds[type_ids[row]],
                modes[mode_ids[row]],
                sources[latest[row]],
                latest_positions[row],
                befores[row],
                afters[row],
                updates[row],
                raws[raw_ids[row]],
            )
            entry.tuned = tuned[row]
            entry.fastest, entry.fastest_position, entry.fastest_after = (
                sources[fastest[row]],
                fastest_positions[row],
                fastest_afters[row],
            )
            table.insert(entry)
        return table


def _indexed(values: list[Any]) -> tuple[list[Any], list[int]]:
    """The distinct values (strings, None, tuples of op types) in the order first seen, and each value's index
    among them."""
    index: dict[Any, int] = {}
    ids = [index.setdefault(value, len(index)) for value in values]
    return list(index), ids
