"""The bank state that parsed result files imply: their entries (entries.py), files, totals and model figures.

The summary of a state is plain data (summary_data.py). Merging is commutative: states from worker processes and
from the cache fold into one, and any order of any set of files gives the same state (tests/report/oracle.py is
the reference algorithm that property tests hold this one against). Plain typed Python that mypyc can compile
(setup.py); the pure module is the fallback.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

from aoe_runner.report.entries import Source, Table
from aoe_runner.results.parsed import ParsedFile, RawRecords
from aoe_runner.results.report_facts import ReportFacts

STATE_VERSION: Final = 4
_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder()


class FileRow:
    """A file's row in the summary; the rest of its ParsedFile is not kept."""

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


class ModelPoint:
    def __init__(self, section: str, tuning_name: str | None, before: float, after: float, source: Source) -> None:
        self.section, self.tuning_name, self.before, self.after, self.source = section, tuning_name, before, after, source


class BankState:
    """Accumulates parsed files; summary_data.summary_data() gives the bank summary they imply."""

    def __init__(self) -> None:
        self.operators = Table()
        self.subgraphs = Table()
        self.files: list[FileRow] = []
        self.model_points: list[ModelPoint] = []
        self.repo: dict[str, list[int]] = {"OPAT": [0] * 7, "SGAT": [0] * 7}  # reports, then report_facts.REPO_FIELDS
        self.failed_operators: set[str] = set()
        self.status_counts: dict[str, int] = {}
        self.tuning_times: list[float] = []  # each report's, summed exactly (exact_sum): in any order, the same total
        self.without_tuning_time = 0
        self.strings: dict[object, Any] = {}  # one object per distinct op type, mode and figure
        self.legacy: Any = None  # a legacy.LegacyMerger once a legacy file is seen

    def add(self, parsed: ParsedFile, spend: bool = False) -> None:
        """Merge a parsed file; `spend` frees its typed records as they are merged (`parsed` is then spent): each is
        freed while it is still in the CPU's cache, instead of in a later pass over all of them."""
        sources = [Source.of(parsed.path, facts) for facts in parsed.reports]
        for facts, source in zip(parsed.reports, sources, strict=True):
            self._add_facts(facts, source)
        self.operators.merge(parsed.operators, sources, self.strings)
        if parsed.typed:
            self.operators.merge_typed(parsed.typed, sources, self.strings, len(parsed.operators), spend)
        if parsed.raw is not None:
            parsed = self._merge_raw(parsed, parsed.raw, sources, spend)
        self.subgraphs.merge(parsed.subgraphs, sources, self.strings)
        for number, section in parsed.legacy:
            self._legacy().add(section, sources[number].legacy_context())
        self.files.append(FileRow.of(parsed))

    def _merge_raw(self, parsed: ParsedFile, raw: RawRecords, sources: list[Source], spend: bool) -> ParsedFile:
        """Merge a file's raw records a batch at a time (parsed.RawRecords); the file as merged: itself, or the
        normaliser's parse of it when a batch needs the normaliser (its rows after those merged are merged from it).
        `parsed.raw` stays, so the file can still be stored whole (ParsedFile.to_bytes decodes it again)."""
        position = len(parsed.operators)
        for number, records in raw.batches():
            position = self.operators.merge_typed([records], [sources[number]], self.strings, position, spend)
        fallback = raw.fallback
        if fallback is None:
            return parsed
        self.operators.merge(fallback.operators, sources, self.strings, position)
        return fallback

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
        self.tuning_times += other.tuning_times
        self.without_tuning_time += other.without_tuning_time
        if other.legacy is not None:
            self._legacy().absorb(other.legacy)

    def drop_files(self, paths: set[str]) -> None:
        """Forget files that added nothing but their row (no report): named empty files refused by the caller."""
        self.files = [row for row in self.files if row.path not in paths]

    def _legacy(self) -> Any:
        if self.legacy is None:
            from aoe_runner.report.legacy import LegacyMerger

            self.legacy = LegacyMerger()
        return self.legacy

    def _add_facts(self, facts: ReportFacts, source: Source) -> None:
        if facts.tuning_time is not None:
            self.tuning_times.append(facts.tuning_time)
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
        self, section: str, repo: list[int | None] | None, model: tuple[float, float] | None, name: str | None, source: Source
    ) -> None:
        if repo is not None:
            totals = self.repo[section]
            totals[0] += 1
            for number, value in enumerate(repo, start=1):
                totals[number] += value or 0
        if model is not None:
            self.model_points.append(ModelPoint(section, name, model[0], model[1], source))

    # the cache's form

    @property
    def cacheable(self) -> bool:
        return self.legacy is None

    def to_bytes(self) -> bytes:
        """The whole state but legacy sections, for the cache; raises UnicodeEncodeError for a lone surrogate."""
        return _ENCODER.encode(self.to_wire())

    def to_wire(self) -> list[Any]:
        """The whole state but legacy sections as lists, numbers and strings (msgpack or marshal write it)."""
        sources: dict[int, Source] = {}
        for table in (self.operators, self.subgraphs):
            for entry in table.entries:
                sources.setdefault(id(entry.latest), entry.latest)
                sources.setdefault(id(entry.fastest), entry.fastest)
        for point in self.model_points:
            sources.setdefault(id(point.source), point.source)
        source_ids = {key: number for number, key in enumerate(sources)}
        return [
            STATE_VERSION,
            [source.wire() for source in sources.values()],
            self.operators.to_wire(source_ids),
            self.subgraphs.to_wire(source_ids),
            [[row.path, row.layout, row.partial, row.reports, row.warnings] for row in self.files],
            [[source_ids[id(p.source)], p.section, p.tuning_name, p.before, p.after] for p in self.model_points],
            [self.repo["OPAT"], self.repo["SGAT"]],
            sorted(self.failed_operators),
            self.status_counts,
            self.tuning_times,
            self.without_tuning_time,
        ]

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> BankState:
        """Raises ValueError for data this version did not write."""
        try:
            return cls.from_wire(_DECODER.decode(data))
        except msgspec.DecodeError as error:
            raise ValueError(f"unreadable cached state: {error}") from None

    @classmethod
    def from_wire(cls, wire: Any) -> BankState:
        """Raises ValueError for lists this version did not write."""
        try:
            if not wire or wire[0] != STATE_VERSION:
                raise ValueError("another cache format")
            _, sources_wire, operators, subgraphs, files, points, repo, failed, statuses, tuning_time, without = wire
            state = cls()
            sources = [Source(*fields) for fields in sources_wire]
            state.operators = Table.from_wire(operators, sources, state.strings)
            state.subgraphs = Table.from_wire(subgraphs, sources, state.strings)
            state.files = [FileRow(*fields) for fields in files]
            state.model_points = [
                ModelPoint(section, name, before, after, sources[number]) for number, section, name, before, after in points
            ]
            state.repo = {"OPAT": list(repo[0]), "SGAT": list(repo[1])}
            state.failed_operators = set(failed)
            state.status_counts = dict(statuses)
            state.tuning_times = [float(seconds) for seconds in tuning_time]
            state.without_tuning_time = int(without)
        except (TypeError, ValueError, IndexError, KeyError) as error:
            raise ValueError(f"unreadable cached state: {error}") from None
        return state
