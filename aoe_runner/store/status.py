"""`aoe-runner store status`: which run store this home uses, whether it can be reached, what it holds, and what
this host recorded that the store does not have yet."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from aoe_runner.runs.history import RunStore
from aoe_runner.runs.index import RunFilter
from aoe_runner.store.choice import StoreChoice
from aoe_runner.store.pg_index import StoreUnavailable


@dataclass(frozen=True)
class StoreStatus:
    store: str  # the URL without its password, or "local"
    source: str  # what chose it: --store, AOE_RUNNER_STORE, the store.conf path, or "default"
    home: str
    local_runs: int  # runs in this home's own history
    reachable: bool | None = None  # None: the local store, nothing to reach
    problem: str | None = None  # why it cannot be reached
    runs: int | None = None  # runs in the shared store
    hosts: int | None = None  # hosts that recorded them
    not_pushed: int | None = None  # this host's runs the shared store lacks, or holds an older state of

    @property
    def shared(self) -> bool:
        return self.store != "local"


def store_status(home: Path, choice: StoreChoice) -> StoreStatus:
    """The status of the store `choice` names; a shared store that cannot be reached says why."""
    if choice.url is None:
        return StoreStatus(choice.shown, choice.source, str(home), len(RunStore(home).list(RunFilter())))
    from aoe_runner.store.push import unpushed
    from aoe_runner.store.shared import SharedRunStore

    store = SharedRunStore(home, choice)
    own = store.local_index.rows(RunFilter())  # this host's runs, as `runs push` sees them
    status = StoreStatus(choice.shown, choice.source, str(home), len(own))
    try:
        ((runs, hosts),) = store.shared.query("SELECT count(*), count(DISTINCT host) FROM runs", [])
        pending = unpushed(store, own)
    except StoreUnavailable as error:
        return replace(status, reachable=False, problem=error.message)
    finally:
        store.shared.close()
    return replace(status, reachable=True, runs=runs, hosts=hosts, not_pushed=len(pending))
