"""The bank state that parsed result files imply, merged record by record, and the summary it gives.

This is summary.BankMerger's algorithm (that module is the reference; a test keeps both giving the same
JSON, byte for byte), laid out for speed: one dictionary lookup by the entry's name per record, each
entry's state in columns updated in place (numbers in arrays, so no decoded object outlives its file),
provenance built once per report and only for entries it wins, and a summary of plain data that
`msgspec` encodes. Merging is commutative: states from worker processes and from the cache fold into one.
"""

from __future__ import annotations

import statistics
from array import array
from collections.abc import Iterable
from datetime import datetime
from itertools import count
from typing import Any

import msgspec

from aoe_runner.results.parsed import REPO_FIELDS, Columns, ParsedFile, ReportFacts, Types, moment_of

CONFLICT_TOLERANCE = 0.02  # summary.CONFLICT_TOLERANCE
DEFAULT_MIN_GAIN_PCT = 1.0  # summary.DEFAULT_MIN_GAIN_PCT (a test keeps them equal)
SCHEMA_VERSION = 1  # summary.SCHEMA_VERSION
STATE_VERSION = 1
Order = tuple[int, str, int]  # timestamp key (0 without one), file, report index
_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder()


class Source:
    """One report: where its records came from, and its place in the order of all reports."""

    __slots__ = ("file", "key", "index", "timestamp", "timestamp_source", "order", "_provenance")

    def __init__(self, file: str, facts: ReportFacts) -> None:
        self.file = file
        self.key = facts.key
        self.index = facts.index
        self.timestamp = facts.timestamp
        self.timestamp_source = facts.timestamp_source
        self.order: Order = (facts.timestamp or 0, file, facts.index)
        self._provenance: dict[str, Any] | None = None

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

    def legacy_context(self) -> Any:
        """What legacy_summary.LegacyMerger reads of a report (its order with a datetime, as summary's)."""
        return _LegacyContext(
            self.file, moment_of(self.timestamp), (moment_of(self.order[0]) or datetime.min, self.file, self.index)
        )

    def __reduce__(self) -> Any:
        return (_source, (self.file, self.key, self.index, self.timestamp, self.timestamp_source))


def _source(file: str, key: str | None, index: int, timestamp: int | None, timestamp_source: str) -> Source:
    return Source(
        file,
        ReportFacts(key, index, timestamp, timestamp_source, None, True, None, False, None, [], None, None, False, None, None),
    )


class _LegacyContext:
    __slots__ = ("file", "timestamp", "order")

    def __init__(self, file: str, timestamp: datetime | None, order: tuple[datetime, str, int]) -> None:
        self.file, self.timestamp, self.order = file, timestamp, order


class Table:
    """Bank entries of one kind in columns, one slot per entry: a name's first variant is found by the name alone."""

    __slots__ = (
        "first",
        "variants",
        "keys",
        "types",
        "modes",
        "latest",
        "fastest",
        "raw",
        "update",
        "times",
        "times_",
        "positions",
    )

    def __init__(self) -> None:
        self.first: dict[str, int] = {}  # name (or repo_key) -> slot of its first variant
        self.variants: dict[tuple[str, Types | None, str | None], int] = {}  # its other (types, mode) variants
        self.keys: list[str] = []
        self.types: list[Types | None] = []
        self.modes: list[str | None] = []
        self.latest: list[Source] = []
        self.fastest: list[Source] = []
        self.raw: list[str | None] = []
        self.update = bytearray()
        self.times = array("d")  # per slot: latest before, latest after, fastest after
        self.times_ = array("q")  # per slot: times tuned
        self.positions = array("q")  # per slot: latest position, fastest position (in the record's report)

    def __len__(self) -> int:
        return len(self.keys)

    def slot(self, key: str, types: Types | None, mode: str | None) -> int | None:
        slot = self.first.get(key)
        if slot is None or (self.types[slot] == types and self.modes[slot] == mode):
            return slot
        return self.variants.get((key, types, mode))

    def new_slot(
        self,
        key: str,
        types: Types | None,
        mode: str | None,
        source: Source,
        position: int,
        before: float,
        after: float,
        update: int,
        raw: str | None,
        tuned: int = 1,
    ) -> None:
        slot = len(self.keys)
        if key in self.first:
            self.variants[(key, types, mode)] = slot
        else:
            self.first[key] = slot
        self.keys.append(key)
        self.types.append(types)
        self.modes.append(mode)
        self.latest.append(source)
        self.fastest.append(source)
        self.raw.append(raw)
        self.update.append(update)
        self.times.extend((before, after, after))
        self.times_.append(tuned)
        self.positions.extend((position, position))

    def merge(self, columns: Columns, sources: list[Source], strings: dict[Any, Any]) -> None:
        """Observe every record of one file's columns; the hot loop of `report`."""
        first, types_, modes_, latest, fastest = self.first, self.types, self.modes, self.latest, self.fastest
        raws, updates, times, tuned, positions = self.raw, self.update, self.times, self.times_, self.positions
        intern = strings.setdefault
        records = zip(
            count(),
            columns.keys,
            columns.types,
            columns.modes,
            columns.before,
            columns.after,
            columns.update,
            columns.raw,
            columns.report,
        )
        for position, key, types, mode, before, after, update, raw, report in records:
            source = sources[report]
            slot = first.get(key)
            if slot is None or types_[slot] != types or modes_[slot] != mode:
                slot = self.slot(key, types, mode)
                if slot is None:
                    self.new_slot(
                        key, intern(types, types), intern(mode, mode), source, position, before, after, update, intern(raw, raw)
                    )
                    continue
            tuned[slot] += 1
            at = 3 * slot
            held = latest[slot]
            if held is source or source.order > held.order:
                latest[slot] = source
                times[at] = before
                times[at + 1] = after
                positions[2 * slot] = position
                updates[slot] = update
                raws[slot] = intern(raw, raw)
            fastest_after = times[at + 2]
            if after < fastest_after or (
                after == fastest_after and (source.order, position) < (fastest[slot].order, positions[2 * slot + 1])
            ):
                times[at + 2] = after
                fastest[slot] = source
                positions[2 * slot + 1] = position

    def absorb(self, other: Table) -> None:
        """Fold in another table: each entry as if this one had seen the other's records too."""
        for slot in range(len(other)):
            key, types, mode = other.keys[slot], other.types[slot], other.modes[slot]
            at, pos = 3 * slot, 2 * slot
            before, after, fastest_after = other.times[at : at + 3]
            latest_position, fastest_position = other.positions[pos : pos + 2]
            mine = self.slot(key, types, mode)
            if mine is None:
                self.new_slot(
                    key,
                    types,
                    mode,
                    other.latest[slot],
                    latest_position,
                    before,
                    after,
                    other.update[slot],
                    other.raw[slot],
                    other.times_[slot],
                )
                mine = len(self) - 1
                self.fastest[mine] = other.fastest[slot]
                self.times[3 * mine + 2] = fastest_after
                self.positions[2 * mine + 1] = fastest_position
                continue
            self.times_[mine] += other.times_[slot]
            theirs = (other.latest[slot].order, latest_position)
            if theirs > (self.latest[mine].order, self.positions[2 * mine]):
                self.latest[mine] = other.latest[slot]
                self.times[3 * mine : 3 * mine + 2] = array("d", (before, after))
                self.positions[2 * mine] = latest_position
                self.update[mine] = other.update[slot]
                self.raw[mine] = other.raw[slot]
            theirs_fastest = (fastest_after, other.fastest[slot].order, fastest_position)
            if theirs_fastest < (self.times[3 * mine + 2], self.fastest[mine].order, self.positions[2 * mine + 1]):
                self.times[3 * mine + 2] = fastest_after
                self.fastest[mine] = other.fastest[slot]
                self.positions[2 * mine + 1] = fastest_position

    def to_wire(self, source_ids: dict[int, int]) -> list[Any]:
        types = [list(t) if type(t) is tuple else t for t in self.types]
        latest = [source_ids[id(source)] for source in self.latest]
        fastest = [source_ids[id(source)] for source in self.fastest]
        return [
            self.keys,
            types,
            self.modes,
            latest,
            fastest,
            self.raw,
            bytes(self.update),
            self.times.tobytes(),
            self.times_.tobytes(),
            self.positions.tobytes(),
        ]

    @classmethod
    def from_wire(cls, wire: list[Any], sources: list[Source], strings: dict[Any, Any]) -> Table:
        table = cls()
        keys, types, modes, latest, fastest, raw, update, times, tuned, positions = wire
        intern = strings.setdefault
        table.keys = keys
        table.types = [intern(t, t) for t in (tuple(t) if type(t) is list else t for t in types)]
        table.modes = [intern(mode, mode) for mode in modes]
        table.raw = [intern(figure, figure) for figure in raw]
        table.latest = [sources[number] for number in latest]
        table.fastest = [sources[number] for number in fastest]
        table.update = bytearray(update)
        table.times.frombytes(times)
        table.times_.frombytes(tuned)
        table.positions.frombytes(positions)
        for slot, (key, kind, mode) in enumerate(zip(keys, table.types, table.modes, strict=True)):
            if key in table.first:
                table.variants[(key, kind, mode)] = slot
            else:
                table.first[key] = slot
        return table

    def conflict(self, slot: int) -> str | None:
        latest_after, fastest_after = self.times[3 * slot + 1], self.times[3 * slot + 2]
        fastest_file = self.fastest[slot].file
        if fastest_file == self.latest[slot].file or latest_after <= fastest_after * (1 + CONFLICT_TOLERANCE):
            return None
        return f"latest result {latest_after:g} is slower than {fastest_after:g} recorded in {fastest_file}"


class BankState:
    """Accumulates parsed files; `summary_data()` is the bank summary as plain data, in BankSummary's field order."""

    def __init__(self) -> None:
        self.operators = Table()
        self.subgraphs = Table()
        self.files: list[FileRow] = []  # each file's path, layout, partial flag, report count and warnings
        self.model_points: list[tuple[Order, dict[str, Any]]] = []
        self.repo = {"OPAT": [0] * 7, "SGAT": [0] * 7}  # reports, then REPO_FIELDS
        self.failed_operators: set[str] = set()
        self.status_counts: dict[str, int] = {}
        self.tuning_time = 0.0
        self.without_tuning_time = 0
        self.strings: dict[Any, Any] = {}  # one object per distinct op type, mode and figure
        self.legacy: Any = None  # a legacy_summary.LegacyMerger once a legacy file is seen

    def add(self, parsed: ParsedFile) -> None:
        sources = [Source(parsed.path, facts) for facts in parsed.reports]
        for facts, source in zip(parsed.reports, sources, strict=True):
            self._add_facts(facts, source)
        self.operators.merge(parsed.operators, sources, self.strings)
        self.subgraphs.merge(parsed.subgraphs, sources, self.strings)
        for number, section in parsed.legacy:
            self._legacy().add(section, sources[number].legacy_context())
        self.files.append(FileRow.of(parsed))

    def add_all(self, files: Iterable[ParsedFile]) -> None:
        for parsed in files:
            self.add(parsed)

    def absorb(self, other: BankState) -> None:
        self.operators.absorb(other.operators)
        self.subgraphs.absorb(other.subgraphs)
        self.files += other.files
        self.model_points += other.model_points
        for section, totals in other.repo.items():
            self.repo[section] = [mine + theirs for mine, theirs in zip(self.repo[section], totals, strict=True)]
        self.failed_operators |= other.failed_operators
        for status, number in other.status_counts.items():
            self.status_counts[status] = self.status_counts.get(status, 0) + number
        self.tuning_time += other.tuning_time
        self.without_tuning_time += other.without_tuning_time
        if other.legacy is not None:
            self._legacy().absorb(other.legacy)

    def _legacy(self) -> Any:
        if self.legacy is None:
            from aoe_runner.legacy_summary import LegacyMerger

            self.legacy = LegacyMerger()
        return self.legacy

    def _add_facts(self, facts: ReportFacts, source: Source) -> None:
        if facts.tuning_time is not None:
            self.tuning_time += facts.tuning_time
        elif facts.counts_tuning_time:
            self.without_tuning_time += 1
        if facts.opat:
            self.failed_operators.update(facts.failed_operators)
            if facts.status:
                self.status_counts[facts.status] = self.status_counts.get(facts.status, 0) + 1
            self._section_totals("OPAT", facts.opat_repo, facts.opat_model, facts.tuning_name, source)
        if facts.sgat:
            self._section_totals("SGAT", facts.sgat_repo, facts.sgat_model, facts.tuning_name, source)

    def _section_totals(
        self,
        section: str,
        repo: list[int | None] | None,
        model: tuple[float, float] | None,
        tuning_name: str | None,
        source: Source,
    ) -> None:
        if repo is not None:
            totals = self.repo[section]
            totals[0] += 1
            for number, value in enumerate(repo, start=1):
                totals[number] += value or 0
        if model is not None:
            self._model_point(section, tuning_name, model, source)

    def _model_point(self, section: str, tuning_name: str | None, model: tuple[float, float], source: Source) -> None:
        before, after = model
        point = {
            "section": section,
            "tuning_name": tuning_name,
            "before_ms": before,
            "after_ms": after,
            "speedup": before / after if after > 0 else None,
            "source": source,
        }
        self.model_points.append((source.order, point))

    @property
    def cacheable(self) -> bool:
        return self.legacy is None

    def to_bytes(self) -> bytes:
        """The whole state, for the cache (not with legacy sections, which are never cached)."""
        sources: dict[int, Source] = {}
        for source in (*self.operators.latest, *self.operators.fastest, *self.subgraphs.latest, *self.subgraphs.fastest):
            sources.setdefault(id(source), source)
        for _, point in self.model_points:
            sources.setdefault(id(point["source"]), point["source"])
        source_ids = {key: number for number, key in enumerate(sources)}
        wire = [
            STATE_VERSION,
            [[s.file, s.key, s.index, s.timestamp, s.timestamp_source] for s in sources.values()],
            self.operators.to_wire(source_ids),
            self.subgraphs.to_wire(source_ids),
            [[row.path, row.layout, row.partial, row.reports, row.warnings] for row in self.files],
            [
                [source_ids[id(point["source"])], point["section"], point["tuning_name"], point["before_ms"], point["after_ms"]]
                for _, point in self.model_points
            ],
            [self.repo["OPAT"], self.repo["SGAT"]],
            sorted(self.failed_operators),
            self.status_counts,
            self.tuning_time,
            self.without_tuning_time,
        ]
        return _ENCODER.encode(wire)

    @classmethod
    def from_bytes(cls, data: bytes) -> BankState:
        """Raises ValueError for data this version did not write."""
        try:
            wire = _DECODER.decode(data)
            if not wire or wire[0] != STATE_VERSION:
                raise ValueError("another cache format")
            _, sources_wire, operators, subgraphs, files, points, repo, failed, statuses, tuning_time, without = wire
            state = cls()
            sources = [_source(*fields) for fields in sources_wire]
            state.operators = Table.from_wire(operators, sources, state.strings)
            state.subgraphs = Table.from_wire(subgraphs, sources, state.strings)
            state.files = [FileRow(*fields) for fields in files]
            for number, section, tuning_name, before, after in points:
                state._model_point(section, tuning_name, (before, after), sources[number])
            state.repo = {"OPAT": list(repo[0]), "SGAT": list(repo[1])}
            state.failed_operators = set(failed)
            state.status_counts = dict(statuses)
            state.tuning_time = float(tuning_time)
            state.without_tuning_time = int(without)
        except (msgspec.DecodeError, TypeError, ValueError, IndexError, KeyError) as error:
            raise ValueError(f"unreadable cached state: {error}") from None
        return state

    def drop_files(self, paths: set[str]) -> None:
        """Forget files that added nothing but their row (no report): named empty files refused by the caller."""
        self.files = [row for row in self.files if row.path not in paths]

    def summary(self, min_gain_pct: float = DEFAULT_MIN_GAIN_PCT) -> Any:
        """The summary as summary.BankSummary."""
        return bank_summary(self.summary_data(min_gain_pct))

    def summary_data(self, min_gain_pct: float = DEFAULT_MIN_GAIN_PCT) -> dict[str, Any]:
        operators = _operator_entries(self.operators)
        subgraphs = _subgraph_entries(self.subgraphs)
        threshold = 1 + min_gain_pct / 100
        labelled = [(operator_label(e), e) for e in operators] + [(f"subgraph {e['repo_key']}", e) for e in subgraphs]
        files = sorted(self.files, key=lambda row: row.path)
        data: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "min_gain_pct": float(min_gain_pct),
            "totals": self._totals(operators, subgraphs, files),
            "operators": operators,
            "subgraphs": subgraphs,
            "op_types": _op_type_stats(operators),
            "model_times": [
                {**point, "source": point["source"].provenance()} for _, point in sorted(self.model_points, key=_first)
            ],
            "no_real_gain": [label for label, e in labelled if e["speedup"] is not None and e["speedup"] < threshold],
            "conflicts": [label for label, e in labelled if e["conflict"]],
            "files": [row.data() for row in files],
        }
        legacy = self.legacy.summary(min_gain_pct) if self.legacy is not None else None
        if legacy is not None:
            data["legacy"] = legacy
        return data

    def _totals(self, operators: list[dict[str, Any]], subgraphs: list[dict[str, Any]], files: list[FileRow]) -> dict[str, Any]:
        opat, sgat = _repo_totals(self.repo["OPAT"]), _repo_totals(self.repo["SGAT"])
        return {
            "files": len(files),
            "partial_files": sum(row.partial for row in files),
            "reports": sum(row.reports for row in files),
            "operators": len(operators),
            "operators_added": sum(e["update_mode"] == "add" for e in operators),
            "operators_updated": sum(e["update_mode"] == "update" for e in operators),
            "subgraphs": len(subgraphs),
            "subgraphs_added": sum(e["update_mode"] == "add" for e in subgraphs),
            "subgraphs_updated": sum(e["update_mode"] == "update" for e in subgraphs),
            "operator_time_saved_us": float(sum(e["time_saved_us"] for e in operators)),
            "subgraph_time_saved_ms": float(sum(e["time_saved_ms"] for e in subgraphs)),
            "median_operator_speedup": _median(e["speedup"] for e in operators),
            "median_subgraph_speedup": _median(e["speedup"] for e in subgraphs),
            "opat_repo": opat,
            "sgat_repo": sgat,
            "opat_hit_rate": opat["hit"] / opat["total"] if opat["total"] else None,
            "sgat_hit_rate": sgat["hit"] / sgat["total"] if sgat["total"] else None,
            "failed_reports": self.status_counts.get("failed", 0),
            "incomplete_reports": self.status_counts.get("incomplete", 0),
            "failed_operators": sorted(self.failed_operators),
            "tuning_time_s": self.tuning_time,
            "reports_without_tuning_time": self.without_tuning_time,
        }


def bank_summary(data: dict[str, Any]) -> Any:
    """The pydantic model of summary data (for tables, csv, diffs and library callers)."""
    from aoe_runner.summary import BankSummary

    return BankSummary.model_validate(data)


class FileRow:
    """A file's row in the summary; the rest of its ParsedFile is not kept."""

    __slots__ = ("path", "layout", "partial", "reports", "warnings")

    def __init__(self, path: str, layout: str, partial: bool, reports: int, warnings: list[str]) -> None:
        self.path, self.layout, self.partial, self.reports, self.warnings = path, layout, partial, reports, warnings

    @classmethod
    def of(cls, parsed: ParsedFile) -> FileRow:
        return cls(parsed.path, parsed.layout, parsed.partial, len(parsed.reports), parsed.warnings)

    def data(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "layout": self.layout,
            "partial": self.partial,
            "reports": self.reports,
            "warnings": self.warnings,
        }


def _first(pair: tuple[Order, Any]) -> Order:
    return pair[0]


def _repo_totals(values: list[int]) -> dict[str, int]:
    return dict(zip(("reports", *REPO_FIELDS), values, strict=True))


def _entry(table: Table, slot: int) -> dict[str, Any]:
    before, after = table.times[3 * slot], table.times[3 * slot + 1]
    return {
        "update_mode": "update" if table.update[slot] else "add",
        "improvement_raw": table.raw[slot],
        "speedup": before / after if after > 0 else None,
        "times_tuned": table.times_[slot],
        "source": table.latest[slot].provenance(),
        "conflict": table.conflict(slot),
    }


def _operator_entries(table: Table) -> list[dict[str, Any]]:
    entries = []
    for slot in range(len(table)):
        entry = _entry(table, slot)
        types = table.types[slot]
        before, after = table.times[3 * slot], table.times[3 * slot + 1]
        entry["name"] = table.keys[slot]
        entry["op_types"] = [types] if type(types) is str else list(types or ())
        entry["tuning_mode"] = table.modes[slot]
        entry["before_us"] = before
        entry["after_us"] = after
        entry["time_saved_us"] = before - after
        entries.append(entry)
    entries.sort(key=_operator_rank)
    return entries


def _subgraph_entries(table: Table) -> list[dict[str, Any]]:
    entries = []
    for slot in range(len(table)):
        entry = _entry(table, slot)
        before, after = table.times[3 * slot], table.times[3 * slot + 1]
        entry["repo_key"] = table.keys[slot]
        entry["before_ms"] = before
        entry["after_ms"] = after
        entry["time_saved_ms"] = before - after
        entries.append(entry)
    entries.sort(key=lambda e: (-e["time_saved_ms"], e["repo_key"]))
    return entries


def _operator_rank(e: dict[str, Any]) -> tuple[float, str, tuple[str, ...], str]:
    return (-e["time_saved_us"], e["name"], tuple(e["op_types"]), e["tuning_mode"] or "")


def operator_label(e: dict[str, Any]) -> str:
    """summary.operator_label for an entry as plain data."""
    mode = f" ({e['tuning_mode']})" if e["tuning_mode"] else ""
    return f"{e['name']} [{'+'.join(e['op_types'])}]{mode}"


def _op_type_stats(operators: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for entry in operators:
        groups.setdefault("+".join(entry["op_types"]) or "(none)", []).append(entry)
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


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None
