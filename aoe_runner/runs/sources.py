"""Turn what a user names on `report` (paths, run ids, nothing) into result paths, checking runs compare fairly."""

from __future__ import annotations

from pathlib import Path

from aoe_runner.errors import EnvironmentDrift, InputError
from aoe_runner.runs.manifest import RunManifest
from aoe_runner.runs.store import TUNING, RunStore


def run_result_paths(store: RunStore, manifest: RunManifest) -> list[str]:
    if not manifest.result_files:
        raise InputError(manifest.id, f"run recorded no result files (status {manifest.status.value})")
    store.check_reachable(manifest)
    directory = store.run_dir(manifest.id)
    return [str(directory / result.recorded) for result in manifest.result_files]


def resolve_side(argument: str, store: RunStore) -> tuple[list[str], RunManifest | None]:
    """A path, directory or pattern stays as it is; anything else must name a recorded run."""
    if Path(argument).exists() or set("*?[") & set(argument) or "/" in argument:
        return [argument], None
    manifest = store.resolve(argument, kind=TUNING)
    return run_result_paths(store, manifest), manifest


def check_comparable(old: RunManifest, new: RunManifest, allow_drift: bool) -> list[str]:
    """The differences between two runs' environments; raises EnvironmentDrift unless allowed."""
    differences = old.fingerprint.drift_from(new.fingerprint)
    if differences and not allow_drift:
        raise EnvironmentDrift(
            f"runs {old.id} and {new.id} were recorded in different environments ({'; '.join(differences)}); "
            "their results are not comparable (pass --allow-env-drift to compare anyway)"
        )
    return differences
