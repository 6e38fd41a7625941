"""What a tuning run's recorded result files say: each operator's and subgraph's tuned time, and the run's gain.

One rule for the local history and the shared store: a run's time saved is the sum, over every operator and subgraph
of its results, of the baseline less the tuned time (in µs), and its speed-up is the median of their speed-ups, as
`report` computes its totals.
"""

from __future__ import annotations

import builtins
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Any, Protocol

from aoe_runner.runs.index import RunFilter, RunRow

if TYPE_CHECKING:
    from aoe_runner.runs.manifest import RunManifest

MS_TO_US = 1000.0
TUNE = "tune"


@dataclass(frozen=True)
class OperatorResult:
    kind: str  # operator or subgraph
    name: str
    tuned_us: float | None
    baseline_us: float | None
    speedup: float | None


@dataclass(frozen=True)
class RunGain:
    saved_us: float | None  # None: the run recorded no result that can be read here
    median_speedup: float | None

    @classmethod
    def of(cls, results: Iterable[OperatorResult]) -> RunGain:
        results = list(results)
        saved = [r.baseline_us - r.tuned_us for r in results if r.baseline_us is not None and r.tuned_us is not None]
        speedups = [r.speedup for r in results if r.speedup is not None and math.isfinite(r.speedup)]
        total = math.fsum(saved) if saved and all(math.isfinite(value) for value in saved) else None
        return cls(total if total is not None and math.isfinite(total) else None, median(speedups) if speedups else None)


NO_GAIN = RunGain(None, None)


@dataclass(frozen=True)
class RunListing:
    """What `runs list` shows: the runs, each tuning run's gain, and whether the runs come from many hosts."""

    rows: list[RunRow]
    gains: dict[str, RunGain]
    shared: bool  # from a store many hosts share: each row names its host

    def gain(self, row: RunRow) -> RunGain:
        return self.gains.get(row.id, NO_GAIN)


def recorded_results(
    manifest: RunManifest, directory: Path, cache: Any = None, problems: list[str] | None = None
) -> list[OperatorResult]:
    """What a finished tuning run's result files (in its record, `directory`) say about each operator and subgraph;
    `cache` is report's cache (None: read every file). Each file that is gone or cannot be read is said in
    `problems`, when given."""
    if manifest.kind != TUNE or not manifest.status.ended or not manifest.result_files:
        return []
    from aoe_runner.report import api as reporting
    from aoe_runner.report.summary_data import operator_label

    paths = [str(directory / result.recorded) for result in manifest.result_files]
    found_paths = [path for path in paths if os.path.isfile(path)]
    if problems is not None:
        problems += [f"run {manifest.id}: {path}: its result file is gone" for path in paths if path not in found_paths]
    if not found_paths:
        return []
    loaded = reporting.summarize_paths(found_paths, workers=1, allow_empty=True, cache=cache)
    if problems is not None:
        problems += [f"run {manifest.id}: {error.message}" for error in loaded.errors]
    data = loaded.data
    found = [
        OperatorResult("operator", operator_label(e), e["after_us"], e["before_us"], e["speedup"]) for e in data["operators"]
    ]
    for e in data["subgraphs"]:
        tuned, baseline = e["after_ms"] * MS_TO_US, e["before_ms"] * MS_TO_US
        found.append(OperatorResult("subgraph", e["repo_key"], tuned, baseline, e["speedup"]))
    return found


class Records(Protocol):
    """Where runs are recorded (runs.history.RunStore)."""

    def load_or_warn(self, run_id: str) -> RunManifest | None: ...

    def warn(self, message: str) -> None: ...

    def run_dir(self, run_id: str) -> Path: ...


def read_results(store: Records, row: RunRow, left_out: str) -> tuple[list[OperatorResult], bool] | None:
    """A recorded run's results as report reads them (its cache spares reading a file twice), and whether every
    result file was read; a file that is gone or unreadable is warned about, the warning ending in `left_out`. None
    when the run's manifest cannot be read (a warning said so)."""
    manifest = store.load_or_warn(row.id)
    if manifest is None:
        return None
    from aoe_runner.report.api import FROM_ENVIRONMENT  # only to read: a listing of kept gains never loads it

    problems: list[str] = []
    results = recorded_results(manifest, store.run_dir(row.id), FROM_ENVIRONMENT, problems)
    for problem in problems:
        store.warn(f"{problem} ({left_out})")
    return results, not problems


class GainsKept(Protocol):
    """Where measured gains are kept between listings (runs.index.RunIndex)."""

    def known_gains(self, rows: Iterable[RunRow]) -> dict[str, tuple[float | None, float | None]]: ...

    def keep_gains(self, measured: dict[str, tuple[str, float | None, float | None]]) -> None: ...


class Listed(Protocol):
    """A store that lists runs (runs.history.RunStore, store.shared.SharedRunStore)."""

    shared_by_hosts: bool

    def list(self, where: RunFilter | None = None) -> builtins.list[RunRow]: ...

    def gains(self, rows: builtins.list[RunRow]) -> dict[str, RunGain]: ...


def local_gains(store: Records, rows: Iterable[RunRow], kept: GainsKept | None = None) -> dict[str, RunGain]:
    """Each tuning run's gain, from its result files in this host's records; the gains of ended runs are `kept` (in
    the index), so that a listing reads a run's files once, not each time (report's cache spares the rest)."""
    rows = [row for row in rows if row.kind == TUNE and row.result_files]
    known = kept.known_gains(rows) if kept is not None else {}
    gains = {run_id: RunGain(*values) for run_id, values in known.items()}
    measured: dict[str, tuple[str, float | None, float | None]] = {}
    for row in rows:
        if row.id in gains:
            continue
        read = read_results(store, row, "its figures leave it out")
        if read is None:
            continue
        results, whole = read
        gain = gains[row.id] = RunGain.of(results)
        if row.status.ended and row.ended_at is not None and whole:  # a file that comes back is read then
            measured[row.id] = (row.ended_at, gain.saved_us, gain.median_speedup)
    if kept is not None:
        kept.keep_gains(measured)
    return gains


def list_runs(store: Listed, where: RunFilter, limit: int | None, by_saved: bool = False) -> RunListing:
    """The runs `where` selects, newest first or (`by_saved`) most time saved first, the first `limit` of them."""
    from dataclasses import replace

    rows = store.list(replace(where, limit=None if by_saved else limit))
    gains = store.gains(rows)
    if by_saved:
        rows = most_saved_first(rows, gains)[:limit]
    return RunListing(rows, {row.id: gains[row.id] for row in rows if row.id in gains}, store.shared_by_hosts)


def most_saved_first(rows: list[RunRow], gains: dict[str, RunGain]) -> list[RunRow]:
    """The rows by time saved, most first; runs without a gain last, newest first among them (the order given)."""

    def order(row: RunRow) -> tuple[bool, float]:
        saved = gains.get(row.id, NO_GAIN).saved_us
        return (saved is None, -(saved or 0.0))

    return sorted(rows, key=order)
