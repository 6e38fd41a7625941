"""The core of `aoe-runner report`: paths in, a bank summary or diff out, with every input problem kept.

A large corpus is split across worker processes: each streams its share of the files, one at a time,
into a local BankMerger, and the parent folds those together. The merge is commutative, so the
summary is the same whatever the split (a test checks it).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from aoe_runner.errors import InputError
from aoe_runner.named_files import reject_empty_named
from aoe_runner.results import find_result_files, load_all
from aoe_runner.summary import DEFAULT_MIN_GAIN_PCT, BankMerger, BankSummary

if TYPE_CHECKING:
    from aoe_runner.diff import BankDiff

PARALLEL_MIN_BYTES = 48 * 2**20  # below this, starting workers costs more than it saves
CHUNKS_PER_WORKER = 1


@dataclass
class Loaded:
    """A summary of whatever could be read, and one error per input that could not."""

    summary: BankSummary
    files_loaded: int
    errors: list[InputError] = field(default_factory=list)


def summarize_paths(
    arguments: Sequence[str],
    min_gain_pct: float = DEFAULT_MIN_GAIN_PCT,
    workers: int | None = None,
    allow_empty: bool = False,
) -> Loaded:
    """Summarise every result file the arguments name; `workers` None chooses by corpus size and CPUs.

    A file named in the arguments (not found by a search) that holds no report is an error unless `allow_empty`.
    """
    paths, errors = find_result_files(arguments)
    merger, loaded, load_errors = merge_files(paths, _worker_count(paths) if workers is None else workers)
    summarized = Loaded(merger.summary(min_gain_pct), loaded, errors + load_errors)
    return summarized if allow_empty else reject_empty_named(summarized, arguments)


def diff_paths(
    old: Sequence[str], new: Sequence[str], threshold_pct: float, allow_empty: bool = False
) -> tuple[BankDiff, Loaded, Loaded]:
    from aoe_runner.diff import diff_summaries  # the diff models are built only when a diff is asked for

    old_side = summarize_paths(old, allow_empty=allow_empty)
    new_side = summarize_paths(new, allow_empty=allow_empty)
    return diff_summaries(old_side.summary, new_side.summary, threshold_pct), old_side, new_side


def merge_files(paths: Sequence[Path], workers: int = 1) -> tuple[BankMerger, int, list[InputError]]:
    """Load and merge files, in this process or across `workers` processes; errors keep the paths' order."""
    if workers <= 1 or len(paths) < 2:
        return _merge_chunk(paths)
    chunk_count = min(len(paths), workers * CHUNKS_PER_WORKER)
    chunks = [list(paths[start::chunk_count]) for start in range(chunk_count)]
    merger, loaded, errors = BankMerger(), 0, []
    with ProcessPoolExecutor(workers, mp_context=_process_context()) as pool:
        for part, count, part_errors in pool.map(_merge_chunk, chunks):
            merger.absorb(part)
            loaded += count
            errors += part_errors
    position = {str(path): index for index, path in enumerate(paths)}
    errors.sort(key=lambda error: position.get(error.where, len(position)))
    return merger, loaded, errors


def _merge_chunk(paths: Sequence[Path]) -> tuple[BankMerger, int, list[InputError]]:
    merger, loaded, errors = BankMerger(), 0, []
    with _paused_gc():
        for item in load_all(paths):
            if isinstance(item, InputError):
                errors.append(item)
            else:
                merger.add_file(item)
                loaded += 1
    return merger, loaded, errors


@contextmanager
def _paused_gc() -> Iterator[None]:
    """Decoded JSON makes millions of objects and no reference cycles: collecting them only costs time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _worker_count(paths: Sequence[Path]) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    if cpus < 2 or _total_size(paths) < PARALLEL_MIN_BYTES:
        return 1
    return min(cpus, 8)


def _total_size(paths: Sequence[Path]) -> int:
    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
        except OSError:
            continue  # loading it will report the problem
    return total


def _process_context() -> multiprocessing.context.BaseContext:
    """fork where it is safe (Linux, no threads started): workers begin with everything imported."""
    if sys.platform == "linux":
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()
