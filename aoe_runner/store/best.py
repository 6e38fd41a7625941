"""`aoe-runner bank best`: per operator, the recorded run whose tuned result was fastest, with its provenance.

A report, not a bank write: it says which run's bank holds each operator's best tuning, the first step toward
merging banks across hosts. Each run's operator results are taken from its result files when it is recorded in the
shared store (`run_results`), so the query never reads another host's files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aoe_runner.runs.index import RunFilter, conditions

if TYPE_CHECKING:
    from aoe_runner.store.shared import SharedRunStore


@dataclass(frozen=True)
class Best:
    kind: str
    name: str
    tuned_us: float
    baseline_us: float | None
    speedup: float | None
    run: str
    host: str
    started_at: str
    cann_version: str | None


def best_results(store: SharedRunStore, soc: str | None, script: str | None) -> list[Best]:
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
    best = [
        Best(kind, name, tuned, baseline, speedup, run, host, started.isoformat(), cann)
        for kind, name, tuned, baseline, speedup, run, host, started, cann in rows
    ]
    return sorted(best, key=_most_saved_first)


def _most_saved_first(best: Best) -> tuple[str, float, str]:
    saved = (best.baseline_us - best.tuned_us) if best.baseline_us is not None else 0.0
    return (best.kind, -saved, best.name)
