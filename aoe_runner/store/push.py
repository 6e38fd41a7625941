"""`aoe-runner runs push`: upload the runs this host recorded locally to the shared store, by run id.

A run is sent when the store lacks it or holds an older state of it (another status or end time), so pushing twice
sends nothing the second time, and a run recorded while the server was down arrives whole, with its end. A run the
server refuses (its data) is named and passed over: the runs after it are still sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aoe_runner.runs.index import RunFilter, RunRow
from aoe_runner.store.pg_index import StoreUnavailable
from aoe_runner.store.shared import SharedRunStore


@dataclass
class Pushed:
    sent: list[str] = field(default_factory=list)
    already: int = 0
    unreadable: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # "RUN: why": runs the server would not take (their data)


def unpushed(store: SharedRunStore, local: list[RunRow]) -> list[RunRow]:
    """Those of this host's runs (`local`) that the store lacks or holds an older state of."""
    held = store.shared.versions([row.id for row in local])
    return [row for row in local if held.get(row.id) != (row.status.value, row.ended_at)]


def push_local_runs(store: SharedRunStore) -> Pushed:
    local = store.local_index.rows(RunFilter())
    sending = {row.id for row in unpushed(store, local)}
    pushed = Pushed()
    for row in reversed(local):  # oldest first
        if row.id not in sending:
            pushed.already += 1
            continue
        found = store.local_record(row.id)
        if found is None:
            pushed.unreadable.append(row.id)
            continue
        try:
            store.send(*found)
        except StoreUnavailable as error:
            if not error.rejected:
                raise  # the store, not this run: the others would fail the same way
            pushed.refused.append(f"{row.id}: {error.reason}")
            continue
        pushed.sent.append(row.id)
    return pushed
