"""What a finished tuning run's result files say about each operator and subgraph, for the shared store's
`run_results` (so that `bank best` never reads another host's files)."""

from __future__ import annotations

from pathlib import Path

from aoe_runner.runs.manifest import RunManifest
from aoe_runner.store.pg_index import OperatorResult

MS_TO_US = 1000.0


def operator_results(manifest: RunManifest, directory: Path) -> list[OperatorResult]:
    """What a finished tuning run's result files (in its record, `directory`) say about each operator and subgraph."""
    if manifest.kind != "tune" or not manifest.status.ended or not manifest.result_files:
        return []
    from aoe_runner.report import api as reporting
    from aoe_runner.report.summary_data import operator_label

    paths = [str(directory / result.recorded) for result in manifest.result_files]
    paths = [path for path in paths if _exists(path)]
    if not paths:
        return []
    data = reporting.summarize_paths(paths, workers=1, allow_empty=True, cache=None).data
    found = [
        OperatorResult("operator", operator_label(e), e["after_us"], e["before_us"], e["speedup"]) for e in data["operators"]
    ]
    for e in data["subgraphs"]:
        tuned, baseline = e["after_ms"] * MS_TO_US, e["before_ms"] * MS_TO_US
        found.append(OperatorResult("subgraph", e["repo_key"], tuned, baseline, e["speedup"]))
    return found


def _exists(path: str) -> bool:
    import os

    return os.path.isfile(path)
