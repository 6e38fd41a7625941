"""The core of `aoe-runner report`: paths in, a bank summary or diff out, with every input problem kept.

Files are parsed into columns (`results/parsed.py`) and merged into one BankState (`merge.py`); the summary is
plain data until a caller asks for the pydantic model. A parsed file, and the merged state of a whole set of
files, are kept in the cache (`cache.py`), so a second report over the same files reads only what
changed. A large corpus is shared out among this process and forked workers (`sharing.py`): each takes the next
file, one at a time, into a local BankState, and the parent folds those together. The merge is commutative, so
the summary is the same whatever the split and whatever came from the cache (tests check both).
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aoe_runner.common import collector
from aoe_runner.common.regular_files import read_json_file
from aoe_runner.errors import InputError
from aoe_runner.report.entries import Entry
from aoe_runner.report.merge import BankState, FileRow
from aoe_runner.report.rules import DEFAULT_MIN_GAIN_PCT
from aoe_runner.results.files import file_identity, find_result_files

if TYPE_CHECKING:
    from aoe_runner.report.cache import ReportCache, Stamp
    from aoe_runner.report.diff import BankDiff
    from aoe_runner.report.models import BankSummary
    from aoe_runner.results.parsed import ParsedFile

PARALLEL_MIN_BYTES = 48 * 2**20  # below this, starting workers costs more than it saves
FROM_ENVIRONMENT: Any = "environment"  # the cache the environment sets (on, in the aoe-runner home, by default)


@dataclass
class Loaded:
    """A summary of whatever could be read, and one error per input that could not."""

    state: BankState
    files_loaded: int
    errors: list[InputError] = field(default_factory=list)
    min_gain_pct: float = DEFAULT_MIN_GAIN_PCT

    @cached_property
    def parts(self) -> tuple[dict[str, Any], list[Entry]]:
        """summary_data.summary_parts: the summary data but its operators' rows, and the ranked operators."""
        from aoe_runner.report.summary_data import summary_parts

        with collector.paused():
            return summary_parts(self.state, self.min_gain_pct)

    @cached_property
    def data(self) -> dict[str, Any]:
        """The summary as plain data (what `--format json` writes)."""
        from aoe_runner.report.summary_data import operator_rows

        data, operators = self.parts
        with collector.paused():  # tens of thousands of entry dicts, no cycles: a collection would only walk them
            return {**data, "operators": operator_rows(operators)}

    @cached_property
    def summary(self) -> BankSummary:
        from aoe_runner.report.summary_data import bank_summary

        return bank_summary(self.data)

    @property
    def files(self) -> list[FileRow]:
        """Each file's row (path, layout, partial, reports, warnings), by path."""
        return sorted(self.state.files, key=lambda row: row.path)

    @property
    def problems(self) -> list[str]:
        """What could not be read, one message per input."""
        return [error.message for error in self.errors]


@dataclass
class Compared:
    """Two sets of results and the diff between them; drift names how the two runs' environments differ."""

    diff: BankDiff
    old: Loaded
    new: Loaded
    drift: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return self.old.problems + self.new.problems

    @property
    def files_loaded(self) -> bool:
        """Both sides read something."""
        return bool(self.old.files_loaded and self.new.files_loaded)


def summarize_paths(
    arguments: Sequence[str],
    min_gain_pct: float = DEFAULT_MIN_GAIN_PCT,
    workers: int | None = None,
    allow_empty: bool = False,
    cache: ReportCache | None = FROM_ENVIRONMENT,
) -> Loaded:
    """Summarise every result file the arguments name; `workers` None chooses by corpus size and CPUs.

    A file named in the arguments (not found by a search) that holds no report is an error unless `allow_empty`.
    """
    paths, errors = find_result_files(arguments)
    state, loaded, load_errors = merge_files(paths, workers, cache)
    summarized = Loaded(state, loaded, errors + load_errors, min_gain_pct)
    return summarized if allow_empty else _refuse_empty_named(summarized, arguments)


def diff_paths(
    old: Sequence[str], new: Sequence[str], threshold_pct: float, allow_empty: bool = False, drift: Sequence[str] = ()
) -> Compared:
    """Summarise both sides and compare them entry by entry; `drift` is carried along for the pages that show it."""
    from aoe_runner.report.diff import diff_summaries  # the diff models are built only when a diff is asked for

    old_side = summarize_paths(old, allow_empty=allow_empty)
    new_side = summarize_paths(new, allow_empty=allow_empty)
    return Compared(diff_summaries(old_side.summary, new_side.summary, threshold_pct), old_side, new_side, list(drift))


def merge_files(
    paths: Sequence[Path], workers: int | None = 1, cache: ReportCache | None = None
) -> tuple[BankState, int, list[InputError]]:
    """Load and merge files, in this process or across `workers` processes (None: by size and CPUs), reading and
    filling `cache` when given; errors keep the paths' order."""
    with collector.paused():
        return _merge_files(paths, workers, cache)


def _merge_files(
    paths: Sequence[Path], workers: int | None, cache: ReportCache | None
) -> tuple[BankState, int, list[InputError]]:
    if cache is FROM_ENVIRONMENT:
        from aoe_runner.report.cache import ReportCache

        cache = ReportCache.from_environment()
    wheres = [os.fspath(path) for path in paths]
    statuses = _regular_statuses(wheres)
    stored = cache.get_set(statuses) if cache is not None else None
    stamps = stored.stamps if stored is not None else []
    members = {stamp.path for stamp in stamps}
    rest = [where for where in wheres if where not in members]
    count = workers if workers is not None else _worker_count(rest, statuses)
    added: BankState | None = None  # what the files not in the stored set add to it
    loaded, errors, new_stamps = len(stamps), [], []
    for part, part_count, part_errors, part_stamps in _merge_parts(rest, count, cache):
        if added is None:
            added = part
        else:
            added.absorb(part)
        loaded += part_count
        errors += part_errors
        new_stamps += part_stamps
    assert added is not None, "_merge_parts yields at least once"
    state = added
    if stored is not None:
        state = stored.state
        state.absorb(added)  # as a later report reads it back: the stored set, then what was added (put_set)
    if cache is not None:
        if new_stamps:
            cache.put_set(stamps + new_stamps, state, stored, added)
        cache.trim()  # also when nothing was written: what a killed writer left goes, ten minutes on
    position = {where: index for index, where in enumerate(wheres)}
    errors.sort(key=lambda error: position.get(error.where, len(position)))
    return state, loaded, errors


ChunkResult = tuple[BankState, int, list[InputError], list["Stamp"]]


def _merge_parts(paths: list[str], workers: int, cache: ReportCache | None) -> Iterator[ChunkResult]:
    """Every file merged into one state, or into one per process: this one and `workers - 1` workers each take the
    next file not yet taken until none is left (`sharing.py`, which also redoes the files of a worker that dies)."""
    if workers <= 1 or len(paths) < 2 or sys.platform != "linux":  # workers are forked where that is safe
        yield _merge_chunk(paths, cache)
        return
    from aoe_runner.report.sharing import Sharing

    sharing = Sharing(partial(_merge_chunk, cache=cache), _chunk_to_wire, _chunk_from_wire)
    yield from sharing.run(paths, workers)


def _chunk_to_wire(chunk: ChunkResult) -> tuple[bool, bytes, Any, int, list[InputError], list[Stamp]]:
    """A worker's result for the pipe: its state as msgpack (compiled classes do not pickle), or marshalled when
    msgpack cannot write it (a lone surrogate in a name), legacy sections pickled as they are."""
    state, loaded, errors, stamps = chunk
    try:
        return True, state.to_bytes(), state.legacy, loaded, errors, stamps
    except (UnicodeEncodeError, OverflowError):
        return False, marshal.dumps(state.to_wire()), state.legacy, loaded, errors, stamps


def _chunk_from_wire(sent: tuple[bool, bytes, Any, int, list[InputError], list[Stamp]]) -> ChunkResult:
    as_msgpack, packed, legacy, loaded, errors, stamps = sent
    state = BankState.from_bytes(packed) if as_msgpack else BankState.from_wire(marshal.loads(packed))
    state.legacy = legacy
    return state, loaded, errors, stamps


def _merge_chunk(paths: Iterable[str], cache: ReportCache | None) -> ChunkResult:
    """The files of `paths` merged into a state."""
    state, loaded, errors, stamps = BankState(), 0, [], []
    with collector.paused():  # in a worker too
        for where in paths:
            try:
                parsed, stamp = _load(where, cache)
            except InputError as error:
                errors.append(error)
                continue
            state.add(parsed, spend=True)  # stored by _load already when it is cached
            loaded += 1
            if stamp is not None:
                stamps.append(stamp)
    return state, loaded, errors, stamps


def _parse(where: str, data: bytes, mtime: float) -> ParsedFile:
    from aoe_runner.results.parse import parse_result_file  # only for a file not cached

    return parse_result_file(where, data, mtime)


def _load(where: str, cache: ReportCache | None) -> tuple[ParsedFile, Stamp | None]:
    """A file's parsed state (from the cache when it still holds) and its stamp (None when it is not cached)."""
    if cache is None:
        data, info = read_json_file(where)
        return _parse(where, data, info.st_mtime), None
    from aoe_runner.report.cache import Stamp

    status: os.stat_result | None
    try:
        status = os.stat(where)
    except OSError:
        status = None
    if status is not None and stat.S_ISREG(status.st_mode):
        hit = cache.get_file(where, status)
        if hit is not None:
            return hit
    data, info = read_json_file(where)
    parsed = _parse(where, data, info.st_mtime)
    if not parsed.cacheable:
        return parsed, None
    stamp = Stamp.of_read(where, info, data)
    cache.put_file(stamp, info, parsed)
    return parsed, stamp


def _regular_statuses(wheres: list[str]) -> dict[str, os.stat_result]:
    statuses = {}
    for where in wheres:
        try:
            info = os.stat(where)
        except OSError:
            continue  # loading it will report the problem
        if stat.S_ISREG(info.st_mode):
            statuses[where] = info
    return statuses


def _worker_count(paths: list[str], statuses: dict[str, os.stat_result]) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    total = sum(statuses[where].st_size for where in paths if where in statuses)
    if cpus < 2 or total < PARALLEL_MIN_BYTES:
        return 1
    return min(cpus, 8)


def _refuse_empty_named(loaded: Loaded, arguments: Sequence[str]) -> Loaded:
    """Each named file without a report (named_files.py) becomes an InputError and leaves the summary (it added
    nothing else to it)."""
    from aoe_runner.report.named_files import named_files, reason

    named = named_files(arguments)
    empty = [row for row in loaded.files if row.reports == 0 and file_identity(row.path) in named]
    if not empty:
        return loaded
    loaded.state.drop_files({row.path for row in empty})
    errors = [*loaded.errors, *(InputError(row.path, reason(row)) for row in empty)]
    return Loaded(loaded.state, loaded.files_loaded - len(empty), errors, loaded.min_gain_pct)
