"""The reference merge: the bank state of result files, written for clarity over pydantic models.

The product merges with report/merge.py and report/entries.py, laid out for speed; this is the same algorithm
written the plain way, the oracle that property tests hold the product against (any order of any set of files
gives the oracle's summary, byte for byte). Every operator (name + op types + tuning mode) and subgraph
(`repo_key`) becomes one entry; the latest result wins. "Latest" is a total order: report timestamp (else the
file name's, else the file's mtime), then file path, report position, record position. The merge keeps, per entry,
only the latest and the fastest result seen; both are commutative reductions.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import Any, Literal

from aoe_runner.report.entries import exact_sum
from aoe_runner.report.legacy import LegacyMerger
from aoe_runner.report.models import (
    BankSummary,
    FileInfo,
    ModelPoint,
    OperatorEntry,
    OpTypeStats,
    Provenance,
    RepoTotals,
    SubgraphEntry,
    Totals,
    operator_label,
    subgraph_label,
)
from aoe_runner.report.rules import CONFLICT_TOLERANCE, DEFAULT_MIN_GAIN_PCT
from aoe_runner.results.model import (
    ModelTimes,
    OperatorChange,
    Report,
    RepoSummary,
    ResultFile,
    SubgraphChange,
    UpdateMode,
)
from aoe_runner.results.report_facts import TimestampSource, timestamp_of

_REPO_FIELDS = ("add", "hit", "reserved", "unsatisfied", "update", "total")


_OPERATOR_AFTER = attrgetter("after_us")


_SUBGRAPH_AFTER = attrgetter("after_ms")


_NO_TIME = datetime.min


ReportOrder = tuple[datetime, str, int]  # timestamp, file, report index: a total order of reports


OrderKey = tuple[ReportOrder, int]  # and the record's position in its report


Record = OperatorChange | SubgraphChange


@dataclass(slots=True)
class _ReportContext:
    """Where a record came from; deliberately not the Report itself, which would keep every record alive."""

    file: str
    report_key: str | None
    report_index: int
    timestamp: datetime | None
    timestamp_source: TimestampSource
    order: ReportOrder

    def provenance(self) -> Provenance:
        return Provenance(
            file=self.file,
            report_key=self.report_key,
            report_index=self.report_index,
            timestamp=self.timestamp,
            timestamp_source=self.timestamp_source,
        )


@dataclass(slots=True)
class _EntryState:
    latest_order: OrderKey
    latest: Record
    latest_context: _ReportContext
    fastest_order: tuple[float, OrderKey]
    fastest_file: str
    times_tuned: int = 1

    def absorb(self, other: _EntryState) -> None:
        self.times_tuned += other.times_tuned
        if other.latest_order > self.latest_order:
            self.latest_order, self.latest, self.latest_context = other.latest_order, other.latest, other.latest_context
        if other.fastest_order < self.fastest_order:
            self.fastest_order, self.fastest_file = other.fastest_order, other.fastest_file

    def conflict(self, latest_after: float) -> str | None:
        fastest_after = self.fastest_order[0]
        if self.fastest_file == self.latest_context.file or latest_after <= fastest_after * (1 + CONFLICT_TOLERANCE):
            return None
        return f"latest result {latest_after:g} is slower than {fastest_after:g} recorded in {self.fastest_file}"


class BankMerger:
    """Accumulates result files one at a time; `summary()` renders the bank state they imply."""

    def __init__(self) -> None:
        self._operators: dict[tuple[str, tuple[str, ...], str | None], _EntryState] = {}
        self._subgraphs: dict[str, _EntryState] = {}
        self._files: list[FileInfo] = []
        self._model_points: list[tuple[OrderKey, ModelPoint]] = []
        self._repo = {"OPAT": RepoTotals(), "SGAT": RepoTotals()}
        self._failed_operators: set[str] = set()
        self._status_counts: Counter[str] = Counter()
        self._tuning_times: list[float] = []  # summed by merge.exact_sum: the same total in any order
        self._without_tuning_time = 0
        self._legacy = LegacyMerger()

    def add_files(self, files: Iterable[ResultFile]) -> None:
        for result_file in files:
            self.add_file(result_file)

    def add_file(self, result_file: ResultFile) -> None:
        self._files.append(
            FileInfo(
                path=result_file.path,
                layout=result_file.layout,
                partial=result_file.partial,
                reports=len(result_file.reports),
                warnings=result_file.warnings,
            )
        )
        for report in result_file.reports:
            self._add_report(report, _context_of(result_file, report))

    def absorb(self, other: BankMerger) -> None:
        """Fold another merger in; the result equals one merger that saw both sets of files."""
        _absorb_states(self._operators, other._operators)
        _absorb_states(self._subgraphs, other._subgraphs)
        self._files += other._files
        self._model_points += other._model_points
        for section, totals in other._repo.items():
            self._repo[section] = _add_repo_totals(self._repo[section], totals)
        self._failed_operators |= other._failed_operators
        self._status_counts += other._status_counts
        self._tuning_times += other._tuning_times
        self._without_tuning_time += other._without_tuning_time
        self._legacy.absorb(other._legacy)

    def _add_report(self, report: Report, context: _ReportContext) -> None:
        if report.basic and report.basic.tuning_time_s is not None:
            self._tuning_times.append(report.basic.tuning_time_s)
        elif report.legacy is None:  # a legacy Auto Tune file has no tuning time to miss
            self._without_tuning_time += 1
        if report.legacy:
            self._legacy.add(report.legacy, context)
        tuning_name = report.basic.tuning_name if report.basic else None
        if report.opat:
            self._observe_all(self._operators, report.opat.operators, context, operator_key, _OPERATOR_AFTER)
            self._failed_operators.update(report.opat.failed_operators)
            if report.opat.status:
                self._status_counts[report.opat.status.value] += 1
            self._add_section_totals("OPAT", report.opat.repo_summary, report.opat.model_times, tuning_name, context)
        if report.sgat:
            self._observe_all(self._subgraphs, report.sgat.subgraphs, context, subgraph_key, _SUBGRAPH_AFTER)
            self._add_section_totals("SGAT", report.sgat.repo_summary, report.sgat.model_times, tuning_name, context)

    @staticmethod
    def _observe_all(
        entries: dict[Any, _EntryState],
        records: Sequence[Record],
        context: _ReportContext,
        key_of: Callable[[Any], Hashable],
        after_of: Callable[[Any], float],
    ) -> None:
        report_order = context.order
        for position, record in enumerate(records):
            key = key_of(record)
            order = (report_order, position)
            after = after_of(record)
            state = entries.get(key)
            if state is None:
                entries[key] = _EntryState(order, record, context, (after, order), context.file)
                continue
            state.times_tuned += 1  # _EntryState.observe, inlined: this runs once per record
            if order > state.latest_order:
                state.latest_order, state.latest, state.latest_context = order, record, context
            if (after, order) < state.fastest_order:
                state.fastest_order, state.fastest_file = (after, order), context.file

    def _add_section_totals(
        self,
        section: Literal["OPAT", "SGAT"],
        repo_summary: RepoSummary | None,
        model_times: ModelTimes | None,
        tuning_name: str | None,
        context: _ReportContext,
    ) -> None:
        totals = self._repo[section]
        if repo_summary is not None:
            totals.reports += 1
            for field in _REPO_FIELDS:
                setattr(totals, field, getattr(totals, field) + (getattr(repo_summary, field) or 0))
        if model_times is not None:
            point = ModelPoint(
                section=section,
                tuning_name=tuning_name,
                before_ms=model_times.before_ms,
                after_ms=model_times.after_ms,
                speedup=model_times.speedup,
                source=context.provenance(),
            )
            self._model_points.append(((context.order, 0), point))

    def summary(self, min_gain_pct: float = DEFAULT_MIN_GAIN_PCT) -> BankSummary:
        operators = sorted((_operator_entry(s) for s in self._operators.values()), key=_operator_rank)
        subgraphs = sorted((_subgraph_entry(s) for s in self._subgraphs.values()), key=_subgraph_rank)
        threshold = 1 + min_gain_pct / 100
        keyed = [(operator_label(e), e) for e in operators] + [(subgraph_label(e), e) for e in subgraphs]
        return BankSummary(
            min_gain_pct=min_gain_pct,
            totals=self._totals(operators, subgraphs),
            operators=operators,
            subgraphs=subgraphs,
            op_types=_op_type_stats(operators),
            model_times=[point for _, point in sorted(self._model_points, key=lambda pair: pair[0])],
            no_real_gain=[label for label, e in keyed if e.speedup is not None and e.speedup < threshold],
            conflicts=[label for label, e in keyed if e.conflict],
            files=sorted(self._files, key=lambda f: f.path),
            legacy=self._legacy.summary(min_gain_pct),
        )

    def _totals(self, operators: list[OperatorEntry], subgraphs: list[SubgraphEntry]) -> Totals:
        op_modes = Counter(e.update_mode for e in operators)
        sg_modes = Counter(e.update_mode for e in subgraphs)
        return Totals(
            files=len(self._files),
            partial_files=sum(f.partial for f in self._files),
            reports=sum(f.reports for f in self._files),
            operators=len(operators),
            operators_added=op_modes[UpdateMode.ADD],
            operators_updated=op_modes[UpdateMode.UPDATE],
            subgraphs=len(subgraphs),
            subgraphs_added=sg_modes[UpdateMode.ADD],
            subgraphs_updated=sg_modes[UpdateMode.UPDATE],
            operator_time_saved_us=sum(e.time_saved_us for e in operators),
            subgraph_time_saved_ms=sum(e.time_saved_ms for e in subgraphs),
            median_operator_speedup=_median(e.speedup for e in operators),
            median_subgraph_speedup=_median(e.speedup for e in subgraphs),
            opat_repo=self._repo["OPAT"],
            sgat_repo=self._repo["SGAT"],
            opat_hit_rate=self._repo["OPAT"].hit_rate,
            sgat_hit_rate=self._repo["SGAT"].hit_rate,
            failed_reports=self._status_counts["failed"],
            incomplete_reports=self._status_counts["incomplete"],
            failed_operators=sorted(self._failed_operators),
            tuning_time_s=exact_sum(self._tuning_times),
            reports_without_tuning_time=self._without_tuning_time,
        )


def summarize(files: Iterable[ResultFile], min_gain_pct: float = DEFAULT_MIN_GAIN_PCT) -> BankSummary:
    merger = BankMerger()
    merger.add_files(files)
    return merger.summary(min_gain_pct)


def operator_key(op: OperatorChange) -> tuple[str, tuple[str, ...], str | None]:
    return (op.name, op.op_types, op.tuning_mode)


def subgraph_key(subgraph: SubgraphChange) -> str:
    return subgraph.repo_key


def _absorb_states(mine: dict[Any, _EntryState], theirs: dict[Any, _EntryState]) -> None:
    """Fold one merger's entries of a kind into another's."""
    for key, state in theirs.items():
        if key in mine:
            mine[key].absorb(state)
        else:
            mine[key] = state


def _context_of(result_file: ResultFile, report: Report) -> _ReportContext:
    timestamp, source = timestamp_of(result_file, report)
    order = (timestamp or _NO_TIME, result_file.path, report.index)
    return _ReportContext(result_file.path, report.key, report.index, timestamp, source, order)


def _add_repo_totals(a: RepoTotals, b: RepoTotals) -> RepoTotals:
    return RepoTotals(reports=a.reports + b.reports, **{f: getattr(a, f) + getattr(b, f) for f in _REPO_FIELDS})


def _operator_entry(state: _EntryState) -> OperatorEntry:
    op = state.latest
    assert isinstance(op, OperatorChange)
    return OperatorEntry(
        name=op.name,
        op_types=list(op.op_types),
        tuning_mode=op.tuning_mode,
        before_us=op.before_us,
        after_us=op.after_us,
        time_saved_us=op.time_saved_us,
        speedup=op.speedup,
        update_mode=op.update_mode,
        improvement_raw=op.improvement_raw,
        times_tuned=state.times_tuned,
        source=state.latest_context.provenance(),
        conflict=state.conflict(op.after_us),
    )


def _subgraph_entry(state: _EntryState) -> SubgraphEntry:
    sg = state.latest
    assert isinstance(sg, SubgraphChange)
    return SubgraphEntry(
        repo_key=sg.repo_key,
        before_ms=sg.before_ms,
        after_ms=sg.after_ms,
        time_saved_ms=sg.time_saved_ms,
        speedup=sg.speedup,
        update_mode=sg.update_mode,
        improvement_raw=sg.improvement_raw,
        times_tuned=state.times_tuned,
        source=state.latest_context.provenance(),
        conflict=state.conflict(sg.after_ms),
    )


def _operator_rank(e: OperatorEntry) -> tuple[float, str, tuple[str, ...], str, bool]:
    """Time saved, then name, types and mode: a mode of null after "" (the same operator in two layouts), so that
    no two rows tie and the order never depends on the order files were read in."""
    return (-e.time_saved_us, e.name, tuple(e.op_types), e.tuning_mode or "", e.tuning_mode is None)


def _subgraph_rank(e: SubgraphEntry) -> tuple[float, str]:
    return (-e.time_saved_ms, e.repo_key)


def _op_type_stats(operators: list[OperatorEntry]) -> list[OpTypeStats]:
    groups: dict[str, list[OperatorEntry]] = {}
    for entry in operators:
        groups.setdefault("+".join(entry.op_types) or "(none)", []).append(entry)
    stats = [
        OpTypeStats(
            op_type=op_type,
            entries=len(members),
            time_saved_us=sum(e.time_saved_us for e in members),
            median_speedup=_median(e.speedup for e in members),
        )
        for op_type, members in groups.items()
    ]
    return sorted(stats, key=lambda s: (-s.time_saved_us, s.op_type))


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None
