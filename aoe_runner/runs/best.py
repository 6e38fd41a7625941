"""`aoe-runner bank best`: per operator and subgraph, the recorded run whose tuned result was fastest.

A report, not a bank write: it says which run's bank holds each one's best tuning. On the local history each run's
results are read from its result files (report's cache spares reading them twice); a shared store answers from the
results each host sent (store/best.py). Both rank alike: the lowest tuned time wins, the newer run on a tie, and the
list runs by kind, then most time saved first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aoe_runner.runs.index import RunFilter
from aoe_runner.runs.outcomes import TUNE, read_results

if TYPE_CHECKING:
    from aoe_runner.runs.history import RunStore


@dataclass(frozen=True)
class Best:
    kind: str
    name: str
    tuned_us: float
    baseline_us: float | None
    speedup: float | None
    run: str
    host: str
    started_at: str  # ISO 8601, as recorded
    cann_version: str | None


def local_best(store: RunStore, soc: str | None, script: str | None) -> list[Best]:
    """The fastest result of each operator and subgraph among this host's finished tuning runs."""
    fastest: dict[tuple[str, str], Best] = {}
    for row in store.list(RunFilter(script=script, soc=soc, kind=TUNE)):  # newest first: a tie keeps the newer run
        read = read_results(store, row, "left out of the best results") if row.result_files else None
        if read is None:
            continue
        for result in read[0]:
            held = fastest.get((result.kind, result.name))
            if result.tuned_us is None or (held is not None and held.tuned_us <= result.tuned_us):
                continue
            host = row.host or ""  # the index holds the hostname of every run it lists
            fastest[(result.kind, result.name)] = Best(
                result.kind, result.name, result.tuned_us, result.baseline_us, result.speedup, row.id, host,
                row.started_at, row.cann_version,
            )  # fmt: skip
    return ranked(fastest.values())


def ranked(found: Iterable[Best]) -> list[Best]:
    """By kind, then most time saved first, then by name."""
    return sorted(found, key=_most_saved_first)


def _most_saved_first(best: Best) -> tuple[str, float, str]:
    saved = (best.baseline_us - best.tuned_us) if best.baseline_us is not None else 0.0
    return (best.kind, -saved, best.name)
