"""One host's worth of runs, recorded as `tune` records them: `python -m tests.store.writer URL HOST COUNT HOME TEMPLATE`.

Used by the load test and bench/store_bench.py: many of these at once pose as many hosts writing one shared store.
Prints the ids it recorded, one a line, and on stderr its own wall time (`elapsed SECONDS`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from aoe_runner.common.jsontext import load_json
from aoe_runner.runs.manifest import RunManifest, RunStatus
from aoe_runner.store.choice import StoreChoice
from aoe_runner.store.shared import SharedRunStore


def record_runs(url: str, host: str, count: int, home: Path, template: RunManifest) -> list[str]:
    store = SharedRunStore(home, StoreChoice(url, None, "writer"), warn=lambda message: print(message, file=sys.stderr))
    store.host = host
    fingerprint = replace(template.fingerprint, hostname=host)
    recorded = []
    for _ in range(count):
        started = datetime.now(timezone.utc)
        run_id, _ = store.create_run_directory(started)
        running = replace(
            template, id=run_id, fingerprint=fingerprint, started_at=started, ended_at=None, status=RunStatus.RUNNING
        )
        store.save_start(running)
        ended = replace(running, status=RunStatus.SUCCEEDED, ended_at=datetime.now(timezone.utc))
        problems = store.save_end(ended)
        if problems or store.offline:
            raise SystemExit(f"{host}: run {run_id} not recorded in the shared store: {problems}")
        recorded.append(run_id)
    return recorded


if __name__ == "__main__":
    url, host, count, home, template = sys.argv[1:6]
    manifest = load_json(RunManifest, Path(template).read_bytes())
    start = time.perf_counter()
    print("\n".join(record_runs(url, host, int(count), Path(home), manifest)))
    print(f"elapsed {time.perf_counter() - start:.3f}", file=sys.stderr)
