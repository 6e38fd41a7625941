"""`aoe-runner bank best` on a shared store: the query over the results each host sent (`run_results`), so that it
never reads another host's files; runs/best.py ranks the local history alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aoe_runner.runs.best import Best, ranked
from aoe_runner.runs.index import RunFilter, conditions

if TYPE_CHECKING:
    from aoe_runner.store.shared import SharedRunStore


def shared_best(store: SharedRunStore, soc: str | None, script: str | None) -> list[Best]:
    found = conditions(RunFilter(script=script, soc=soc))
    where = "".join(f" AND runs.{column} = %s" for column, _ in found)
    rows = store.shared.query(
        "SELECT DISTINCT ON (r.kind, r.name) r.kind, r.name, r.tuned_us, r.baseline_us, r.speedup,"
        " runs.id, runs.host, runs.started_at, runs.cann_version"
        " FROM run_results r JOIN runs ON runs.id = r.run_id"
        f" WHERE r.tuned_us IS NOT NULL{where}"
        " ORDER BY r.kind, r.name, r.tuned_us ASC, runs.started_at DESC",
        [value for _, value in found],
    )
    return ranked(
        Best(kind, name, tuned, baseline, speedup, run, host, started.isoformat(), cann)
        for kind, name, tuned, baseline, speedup, run, host, started, cann in rows
    )
