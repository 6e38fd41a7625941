"""One result file reduced to what the bank merge needs: per-report facts and every kept record in columns.

A `ParsedFile` is what `report` keeps per file (and caches): it is built either by the normaliser (every
variant), its records in columns, or, for the common current-format training file, from the typed msgspec
structs, its operator records left as raw JSON (`RawRecords`) and decoded, checked and merged as they are a
batch at a time (merge.Table.merge_typed), with no `OperatorChange` or column entry made for each; the cache
stores them in columns. A typed file with any operator record the normaliser would skip or warn about is parsed
by the normaliser instead, from that record on, so both ways give the same records and the same warnings (tests
compare them on every fixture, and with such a record in any batch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, Union

import msgspec

from aoe_runner.results.report_facts import REPO_FIELDS, ReportFacts, time_key, timestamp_of

if TYPE_CHECKING:  # a report served whole from the cache never loads pydantic
    from aoe_runner.results.model import Report, ResultFile

# the normaliser's bounds for a time taken as it is (figures.SHORTEST_TIME, LONGEST_TIME: a test holds them equal),
# constants here so that mypyc compiles them into the check of every record
_SHORTEST_TIME: Final = 1e-6
_TIME_LIMIT: Final = 1e300
_ABSOLUTE_TOLERANCE: Final = 0.06  # figures.speedup_figure_matches, inlined in the hot loop
_RELATIVE_TOLERANCE: Final = 0.005
FORMAT_VERSION: Final = 1
BATCH_RECORDS: Final = 256  # records decoded and merged at a time: their structs stay in a core's cache (1 MiB)

Types = str | tuple[str, ...]  # one op type as itself, fused types as a tuple (an operator key's part)


class Columns:
    """Kept records of one kind, one list per field; `report` is the index of the record's report in its file."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.types: list[object] = []  # Types, or None for subgraphs
        self.modes: list[str | None] = []
        self.before: list[float] = []
        self.after: list[float] = []
        self.update: list[bool] = []  # True for "update", False for "add"
        self.raw: list[str | None] = []
        self.report: list[int] = []

    def __len__(self) -> int:
        return len(self.keys)

    def append(
        self, key: str, types: object, mode: str | None, before: float, after: float, update: bool, raw: str | None, report: int
    ) -> None:
        self.keys.append(key)
        self.types.append(types)
        self.modes.append(mode)
        self.before.append(before)
        self.after.append(after)
        self.update.append(update)
        self.raw.append(raw)
        self.report.append(report)

    def to_wire(self) -> list[Any]:
        """The columns for msgpack (fused op types, tuples, come back as lists: from_wire makes them tuples again)."""
        return [self.keys, self.types, self.modes, self.before, self.after, self.update, self.raw, self.report]

    @classmethod
    def from_wire(cls, wire: Any) -> Columns:
        """Raises ValueError for columns of different lengths."""
        columns = cls()
        columns.keys, types, columns.modes, columns.before, columns.after, columns.update, columns.raw, columns.report = wire
        if any(len(column) != len(columns.keys) for column in wire):
            raise ValueError("columns of different lengths")
        columns.types = [tuple(t) if isinstance(t, list) else t for t in types]
        return columns


class ParsedFile:
    """One result file's contribution to a bank summary; `legacy` holds legacy Auto Tune sections (never cached)."""

    __slots__ = ("path", "layout", "partial", "warnings", "reports", "operators", "subgraphs", "legacy", "typed", "raw")

    def __init__(self, path: str, layout: str, partial: bool, warnings: list[str], reports: list[ReportFacts]) -> None:
        self.path = path
        self.layout = layout
        self.partial = partial
        self.warnings = warnings
        self.reports = reports
        self.operators = Columns()
        self.subgraphs = Columns()
        self.legacy: list[tuple[int, Any]] = []  # (report index in `reports`, LegacySection)
        self.typed: list[list[Any]] = []  # a typed file's checked operator records (typed.TypedOperator), per report
        self.raw: RawRecords | None = None  # a typed file's records not yet decoded (merged a batch at a time)

    @property
    def cacheable(self) -> bool:
        return not self.legacy

    def to_bytes(self) -> bytes:
        self.settle()
        head = [FORMAT_VERSION, self.path, self.layout, self.partial, self.warnings, self.reports]
        return _ENCODER.encode([head, self.operator_columns().to_wire(), self.subgraphs.to_wire()])

    def settle(self) -> None:
        """Decode and check records still raw: into `typed`, or, when one needs the normaliser, this file becomes the
        normaliser's parse of it (its warnings, its records in columns)."""
        raw = self.raw
        if raw is None:
            return
        self.raw = None
        typed: list[list[Any]] = [[] for _ in raw.lists]
        for number, records in raw.batches():
            typed[number].extend(records)
        fallback = raw.fallback
        if fallback is None:
            self.typed = typed
            return
        self.layout, self.partial, self.warnings = fallback.layout, fallback.partial, fallback.warnings
        self.reports, self.operators, self.subgraphs, self.legacy = (
            fallback.reports,
            fallback.operators,
            fallback.subgraphs,
            fallback.legacy,
        )

    def operator_columns(self) -> Columns:
        """Every operator record in columns, the typed ones after the normaliser's, as the merge takes them."""
        self.settle()
        if not self.typed:
            return self.operators
        columns = Columns()
        for mine, theirs in zip(columns.to_wire(), self.operators.to_wire(), strict=True):
            mine.extend(theirs)
        for number, records in enumerate(self.typed):
            _append_typed(columns, records, number)
        return columns

    @classmethod
    def from_bytes(cls, data: bytes) -> ParsedFile:
        """Raises ValueError for data this version did not write."""
        try:
            head, operators, subgraphs = _WIRE.decode(data)
            version, path, layout, partial, warnings, reports = head
            if version != FORMAT_VERSION:
                raise ValueError(f"cache format {version}")
            parsed = cls(path, layout, partial, warnings, reports)
            parsed.operators = Columns.from_wire(operators)
            parsed.subgraphs = Columns.from_wire(subgraphs)
        except (msgspec.DecodeError, TypeError) as error:
            raise ValueError(str(error)) from None
        return parsed


_ENCODER = msgspec.msgpack.Encoder()
_COLUMNS = tuple[
    list[str],
    list[Union[str, list[str], None]],  # noqa: UP007 (msgspec evaluates these at run time)
    list[Union[str, None]],  # noqa: UP007
    list[float],
    list[float],
    list[bool],
    list[Union[str, None]],  # noqa: UP007
    list[int],
]
_WIRE = msgspec.msgpack.Decoder(tuple[tuple[int, str, str, bool, list[str], list[ReportFacts]], _COLUMNS, _COLUMNS])


def from_result_file(result_file: ResultFile) -> ParsedFile:
    """The normaliser's model of a file, in columns (every variant; the records' order kept per report)."""
    reports = [_facts(result_file, report) for report in result_file.reports]
    parsed = ParsedFile(result_file.path, result_file.layout, result_file.partial, result_file.warnings, reports)
    operators, subgraphs = parsed.operators, parsed.subgraphs
    for number, report in enumerate(result_file.reports):
        if report.opat:
            for op in report.opat.operators:
                types = op.op_types[0] if len(op.op_types) == 1 else op.op_types
                update = op.update_mode.value == "update"
                operators.append(op.name, types, op.tuning_mode, op.before_us, op.after_us, update, op.improvement_raw, number)
        if report.sgat:
            for sg in report.sgat.subgraphs:
                subgraphs.append(
                    sg.repo_key,
                    None,
                    None,
                    sg.before_ms,
                    sg.after_ms,
                    sg.update_mode.value == "update",
                    sg.improvement_raw,
                    number,
                )
        legacy = getattr(report, "legacy", None)
        if legacy is not None:
            parsed.legacy.append((number, legacy))
    return parsed


class RawRecords:
    """A typed file's operator records as raw JSON, per report, decoded and checked a batch at a time as they are
    merged (merge.BankState.add), so that each batch is merged while its structs are still in the CPU's cache: a
    whole file's structs (about 3 MB for 6,000 records) are not. A batch that `decode` refuses (a type, or UTF-8,
    that the JSON check of the whole file did not look at), or one with a record the normaliser must read, ends the
    batches, and `fallback` is then the file as the normaliser parses it (`reparse(typed)`, as
    parse.parse_result_file would have parsed it whole): its rows before that batch are the rows already merged,
    since the normaliser takes each plain record as it is, in order, one row per tuning mode."""

    def __init__(
        self, lists: list[list[Any]], decode: Callable[[list[Any]], list[Any]], reparse: Callable[[bool], ParsedFile]
    ) -> None:
        self.lists = lists
        self.decode = decode
        self.reparse = reparse
        self.fallback: ParsedFile | None = None

    def batches(self) -> Iterator[tuple[int, list[Any]]]:
        """(report number, checked records) a batch at a time, until the records end or one needs the normaliser."""
        self.fallback = None
        for number in range(len(self.lists)):
            raws = self.lists[number]
            for start in range(0, len(raws), BATCH_RECORDS):
                try:
                    records = self.decode(raws[start : start + BATCH_RECORDS])
                except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, UnicodeDecodeError):
                    self.fallback = self.reparse(False)  # as parse.parse_result_file takes a file that fails to decode
                    return
                if not _plain(records):
                    self.fallback = self.reparse(True)  # as a typed file with a record to normalise
                    return
                yield number, records


def _plain(records: list[Any]) -> bool:
    """Does every record hold times the normaliser takes as they are, and an improvement figure that agrees? Read
    last to first: the records decoded last are the ones still in the CPU's cache, and the merge then starts on
    the first ones, which this pass read last."""
    for index in range(len(records) - 1, -1, -1):  # not reversed(): mypyc 2.4 fails on reversed(list[Any])
        record = records[index]
        performances: dict[str, Any] = record.tune_performance
        for perf in performances.values():
            before: float = perf.before
            after: float = perf.after
            raw: object = perf.improvement
            if not (
                _SHORTEST_TIME <= before < _TIME_LIMIT
                and _SHORTEST_TIME <= after < _TIME_LIMIT
                and isinstance(raw, str)
                and raw.endswith("%")
            ):
                return False
            try:
                claimed = float(raw[:-1])
            except ValueError:
                return False
            expected = (before / after - 1.0) * 100.0
            tolerance = abs(expected) * _RELATIVE_TOLERANCE
            if tolerance < _ABSOLUTE_TOLERANCE:
                tolerance = _ABSOLUTE_TOLERANCE
            if not -tolerance <= claimed - expected <= tolerance:
                return False
    return True


def _append_typed(columns: Columns, records: list[Any], report: int) -> None:
    """Copy checked typed records into columns (the cache's form)."""
    keys, types_column, modes, befores, afters = columns.keys, columns.types, columns.modes, columns.before, columns.after
    updates, raws, reports = columns.update, columns.raw, columns.report
    for record in records:
        name: str = record.op_name
        op_type: object = record.op_type
        types: object = op_type if isinstance(op_type, str) else types_of(op_type)  # type: ignore[arg-type]
        performances: dict[str, Any] = record.tune_performance
        for mode, perf in performances.items():
            keys.append(name)
            types_column.append(types)
            modes.append(mode)
            befores.append(perf.before)
            afters.append(perf.after)
            updates.append(perf.update_mode == "update")
            raws.append(perf.improvement)
            reports.append(report)


def types_of(op_type: list[str] | None) -> Types:
    """A record's op type list as an operator key holds it: one type as itself, fused types as a tuple."""
    if not op_type:
        return ()
    return op_type[0] if len(op_type) == 1 else tuple(op_type)


def _facts(result_file: ResultFile, report: Report) -> ReportFacts:
    timestamp, source = timestamp_of(result_file, report)
    basic, opat, sgat = report.basic, report.opat, report.sgat
    legacy = getattr(report, "legacy", None)
    return ReportFacts(
        key=report.key,
        index=report.index,
        timestamp=time_key(timestamp),
        timestamp_source=source,
        tuning_time=basic.tuning_time_s if basic else None,
        counts_tuning_time=legacy is None,
        tuning_name=basic.tuning_name if basic else None,
        opat=opat is not None,
        status=opat.status.value if opat and opat.status else None,
        failed_operators=list(opat.failed_operators) if opat else [],
        opat_repo=_repo(opat.repo_summary) if opat else None,
        opat_model=_model(opat.model_times) if opat else None,
        sgat=sgat is not None,
        sgat_repo=_repo(sgat.repo_summary) if sgat else None,
        sgat_model=_model(sgat.model_times) if sgat else None,
    )


def _repo(summary: Any) -> list[int | None] | None:
    return None if summary is None else [getattr(summary, name) for name in REPO_FIELDS]


def _model(times: Any) -> tuple[float, float] | None:
    return None if times is None else (times.before_ms, times.after_ms)
