"""Each tuning run with the time its result files saved, oldest first: the data of the history page."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from aoe_runner.errors import InputError
from aoe_runner.runs.history import TUNING, RunFilter, RunStore
from aoe_runner.runs.manifest import RunManifest

MIB = 2**20


@dataclass
class HistoryRun:
    manifest: RunManifest
    operator_saved_us: float | None  # from the run's result files; None when it has none that can be read
    subgraph_saved_ms: float | None
    unread: bool = False  # it recorded result files, and some are not here (removed, or on another host)
    broken: list[InputError] = field(default_factory=list)  # result files that are here and cannot be read

    @property
    def bank_bytes(self) -> int | None:
        after = self.manifest.bank_after
        return after.total_bytes if after is not None and after.exists else None

    @property
    def bank_mib(self) -> float | None:
        size = self.bank_bytes
        return None if size is None else size / MIB


def history_runs(store: RunStore, script: str | None) -> list[HistoryRun]:
    """Every tuning run (of script, when given), oldest first, with the time its results saved."""
    rows = store.list(RunFilter(script=script, kind=TUNING))
    loaded = [(row.id, store.load_or_warn(row.id)) for row in reversed(rows)]
    return [_with_savings(store, run_id, manifest) for run_id, manifest in loaded if manifest is not None]


def _with_savings(store: RunStore, run_id: str, manifest: RunManifest) -> HistoryRun:
    """run_id is the record's, listed and loaded: its directory holds the results (the manifest's own id could name any)."""
    from aoe_runner.report.api import summarize_paths

    if not manifest.result_files:
        return HistoryRun(manifest, None, None)
    directory = store.run_dir(run_id)
    loaded = summarize_paths([str(directory / result.recorded) for result in manifest.result_files], allow_empty=True)
    broken = [error for error in loaded.errors if os.path.lexists(error.where)]
    unread = len(broken) < len(loaded.errors)
    if not loaded.files_loaded:
        return HistoryRun(manifest, None, None, unread, broken)
    totals = loaded.data["totals"]
    return HistoryRun(manifest, totals["operator_time_saved_us"], totals["subgraph_time_saved_ms"], unread, broken)
