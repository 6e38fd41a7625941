"""A run store shared by a team's hosts: the index and manifests in PostgreSQL, artifacts in a shared directory.

Every run this host records is also recorded locally, as by the local store (`runs/<id>/manifest.json` and
`runs.db`), so a run never depends on the database: when the server cannot be reached, the run goes on, the record
stays local, one warning says so, and `aoe-runner runs push` uploads it later. Reading commands read the database;
when it cannot be reached they stop with one line (exit 4). Only this host's own runs are checked for a dead
supervisor: a run of another host is shown as that host last recorded it.
"""

from __future__ import annotations

import builtins
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from aoe_runner.errors import EnvironmentDrift, InputError, UsageError
from aoe_runner.runs.history import RunStore
from aoe_runner.runs.index import RunFilter, RunIndex, RunRow
from aoe_runner.runs.outcomes import TUNE, RunGain, recorded_results
from aoe_runner.runs.status import MANIFEST_NAME, RunStatus
from aoe_runner.store.choice import StoreChoice
from aoe_runner.store.pg_index import PgIndex, StoreUnavailable

if TYPE_CHECKING:
    from aoe_runner.runs.manifest import RunManifest

PUSH_HINT = "'aoe-runner runs push' uploads it when the store is back"
RETRY_AFTER_S = 60.0  # after a use of the store ran out of time, how long runs are recorded locally without asking


class SharedIndex:
    """The local SQLite index for writes that must never fail a run, the shared one for everything read."""

    def __init__(self, store: SharedRunStore, local: RunIndex, shared: PgIndex) -> None:
        self.store = store
        self.local = local
        self.shared = shared

    def upsert(self, manifest: RunManifest) -> None:
        self.local.upsert(manifest)
        self.store.publish(manifest)

    def upsert_all(self, manifests: list[RunManifest]) -> None:
        for manifest in manifests:
            self.upsert(manifest)

    def check_writable(self) -> None:
        self.local.check_writable()

    def rows(self, where: RunFilter) -> list[RunRow]:
        return self.shared.rows(where)

    def ids_starting_with(self, prefix: str, limit: int = 3) -> list[str]:
        return self.shared.ids_starting_with(prefix, limit)

    def all_ids(self) -> set[str]:
        return self.shared.all_ids()

    def delete(self, ids: list[str]) -> None:
        raise UsageError("runs prune and runs rm act on this host's local history: run them with --store local")


class SharedRunStore(RunStore):
    shared_by_hosts = True

    def __init__(self, home: Path, choice: StoreChoice, warn: Callable[[str], None] | None = None) -> None:
        super().__init__(home, warn)
        assert choice.url is not None
        self.choice = choice
        self.host = socket.gethostname()
        if choice.artifacts is not None:
            self.runs_dir = choice.artifacts / "runs"
            self.blob_root = choice.artifacts
        self.shared = PgIndex(choice.url, choice.shown, self.warn)
        self.home_store = RunStore(home, warn)  # this host's history as the local store keeps it, under the home
        self.local_index = RunIndex(self.db_path, self._own_manifests, self.warn)  # its runs live in two places
        self.index = SharedIndex(self, self.local_index, self.shared)
        self._artifacts: dict[str, Path] = {}  # where each run loaded from the database keeps its artifacts
        self.offline = False
        self._quiet_until = 0.0  # monotonic time: until then, do not wait for a store that has just timed out

    # -- writing --------------------------------------------------------------------------------

    def ensure_writable(self) -> None:
        super().ensure_writable()
        self._try(self.shared.check_writable, "this run")

    def publish(self, manifest: RunManifest) -> bool:
        """Send a run to the shared store; False (and one warning) when it cannot be reached.

        Every write is tried, so a run whose start was recorded locally only still reaches the store at its end
        when the server is back by then; the warning that it went away, and the note that it came back, are said once.
        The one exception: for RETRY_AFTER_S after a write ran out of time (a server that does not answer, a lock
        never released), writes are not tried, so that one run never waits for the store more than once a minute.
        """
        if time.monotonic() < self._quiet_until:
            return False
        if not self._try(lambda: self.send(manifest, self.run_dir(manifest.id)), f"run {manifest.id}"):
            return False
        if self.offline:
            self.offline = False
            self.warn(f"the run store {self.choice.shown} is reachable again: run {manifest.id} is recorded there")
        return True

    def send(self, manifest: RunManifest, directory: Path) -> None:
        """Record a run and its operator results in the shared store; its record is in `directory`."""
        self.shared.record(manifest, self._artifacts_note(directory), recorded_results(manifest, directory))

    def local_record(self, run_id: str) -> tuple[RunManifest, Path] | None:
        """A run this host recorded, and its directory: under the home (also from before the shared store), or in the
        shared artifacts directory; None (and a warning) when its manifest cannot be read."""
        for store in (self.home_store, self):
            if (store.run_dir(run_id) / MANIFEST_NAME).is_file():
                manifest = RunStore.load_or_warn(store, run_id)
                return None if manifest is None else (manifest, store.run_dir(run_id))
        self.warn(f"{run_id}: indexed on this host, but its record is gone (skipped)")
        return None

    def _artifacts_note(self, directory: Path) -> str:
        """Where a run's artifacts are, as every host reads it: a shared path, or HOST:PATH."""
        shared = self.choice.artifacts
        if shared is not None and directory.is_relative_to(shared):
            return str(directory)
        return f"{self.host}:{directory}"

    def _own_manifests(self) -> Iterator[RunManifest]:
        """What the local index is rebuilt from: the runs under the home, and this host's in the artifacts directory."""
        yield from self.home_store._readable_manifests()
        if self.choice.artifacts is not None:
            yield from (m for m in RunStore._readable_manifests(self) if m.fingerprint.hostname == self.host)

    def _try(self, write: Callable[[], None], what: str) -> bool:
        """Whether the write reached the store; when it did not, `what` is recorded on this host only."""
        try:
            write()
            return True
        except StoreUnavailable as error:
            self._went_offline(error, what)
        except EnvironmentDrift as error:  # another host upgraded the store's schema: the run goes on, here
            self._went_offline(StoreUnavailable(f"run store {self.choice.shown}", error.message), what)
        return False

    def _went_offline(self, error: StoreUnavailable, what: str) -> None:
        if error.timed_out:
            self._quiet_until = time.monotonic() + RETRY_AFTER_S
        if self.offline:
            return
        self.offline = True
        self.warn(f"{error.message}; {what} is recorded on this host only ({self.home}); {PUSH_HINT}")

    # -- reading --------------------------------------------------------------------------------

    def describe(self) -> str:
        return f"{self.choice.shown} (chosen by {self.choice.source})"

    def unreachable(self) -> StoreUnavailable | None:
        """Why no server answers, or None when the store can be read (the connection stays open for the reads). A
        server that answers and refuses (a password, a database that does not exist) raises: that is for its user
        to fix, not to read around."""
        try:
            self.shared.query("SELECT 1", [])
        except StoreUnavailable as error:
            if not error.unreachable:
                raise
            return error
        return None

    def list(self, where: RunFilter | None = None) -> list[RunRow]:
        rows = self.index.rows(where or RunFilter())
        return [self._settle(row) if self._mine_running(row) else row for row in rows]

    def gains(self, rows: builtins.list[RunRow]) -> dict[str, RunGain]:
        """From the results each run's host sent (`run_results`): another host's files are never read."""
        ids = [row.id for row in rows if row.kind == TUNE and row.result_files]
        if not ids:
            return {}
        found = self.shared.query(
            "SELECT run_id, SUM(baseline_us - tuned_us), percentile_cont(0.5) WITHIN GROUP (ORDER BY speedup)"
            " FROM run_results WHERE run_id = ANY(%s) GROUP BY run_id",
            [ids],
        )
        return {run_id: RunGain(saved, speedup) for run_id, saved, speedup in found}

    def load(self, run_id: str) -> RunManifest:
        if (self.run_dir(run_id) / MANIFEST_NAME).is_file():
            return super().load(run_id)
        found = self.shared.manifest(run_id)
        if found is None:
            raise InputError(run_id, "no recorded run has this id (see 'aoe-runner runs list')")
        manifest, artifacts = found
        if artifacts:
            self._artifacts[run_id] = Path(artifacts.split(":", 1)[1] if _on_a_host(artifacts) else artifacts)
        return manifest

    def run_dir(self, run_id: str) -> Path:
        return self._artifacts.get(run_id) or self.runs_dir / run_id

    def check_reachable(self, manifest: RunManifest) -> None:
        directory = self.run_dir(manifest.id)
        if not directory.is_dir():
            host = manifest.fingerprint.hostname
            raise InputError(
                manifest.id,
                f"its artifacts are on host {host} ({directory}), not reachable from here "
                f"(set AOE_RUNNER_ARTIFACTS to a directory every host mounts)",
            )

    def resolve(self, reference: str, kind: str | None = None) -> RunManifest:
        if reference != "latest" and reference and "/" not in reference and reference not in (".", ".."):
            if not (self.run_dir(reference) / MANIFEST_NAME).is_file() and self.shared.manifest(reference) is not None:
                return self._settled_manifest(reference)
        return super().resolve(reference, kind)

    def _mine_running(self, row: RunRow) -> bool:
        """A run this home recorded and that is marked running: its supervisor can be checked from here. (Another
        home on this host, another user's say, settles its own: settled here, it went into this home's index.)"""
        return (
            row.status is RunStatus.RUNNING and row.host == self.host and row.id in self.local_index.ids_starting_with(row.id, 1)
        )

    def _settled_manifest(self, run_id: str) -> RunManifest:
        manifest = self.load(run_id)
        if manifest.fingerprint.hostname != self.host:
            return manifest  # another host's supervisor cannot be checked from here
        return super()._settled_manifest(run_id)


def _on_a_host(artifacts: str) -> bool:
    return ":" in artifacts and not artifacts.startswith("/")
