"""Turn what a user names on `report` (paths, run ids, nothing) into result paths, checking runs compare fairly."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aoe_runner.errors import EnvironmentDrift, InputError, UsageError
from aoe_runner.runs.history import TUNING, RunStore
from aoe_runner.runs.manifest import RunManifest


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


def run_paths(store: RunStore, references: Sequence[str]) -> list[str]:
    """The result files of the tuning runs named by id, prefix or `latest`."""
    return [path for reference in references for path in run_result_paths(store, store.resolve(reference, kind=TUNING))]


@dataclass
class DiffSides:
    """What `report --diff` compares: OLD and NEW as result paths, and how the two runs' environments differ."""

    old: list[str]
    new: list[str]
    drift: list[str] = field(default_factory=list)
    chosen: tuple[str, str] | None = None  # the two runs picked when none was named


def diff_sides(store: RunStore, sides: Sequence[str], allow_env_drift: bool, script: str | None) -> DiffSides:
    """Two paths or runs, or with none the two newest succeeded tuning runs of one script and mode; environments
    that differ are refused (EnvironmentDrift) unless allowed, and then named in `drift`."""
    old_run: RunManifest | None
    new_run: RunManifest | None
    chosen = None
    if not sides:
        old_run, new_run = store.latest_comparable_pair(script)
        chosen = (old_run.id, new_run.id)
        old_paths, new_paths = run_result_paths(store, old_run), run_result_paths(store, new_run)
    elif len(sides) == 2:
        (old_paths, old_run), (new_paths, new_run) = resolve_side(sides[0], store), resolve_side(sides[1], store)
    else:
        raise UsageError(f"--diff needs two paths or runs, OLD and NEW, or none for the two newest runs (got {len(sides)})")
    drift = check_comparable(old_run, new_run, allow_env_drift) if old_run is not None and new_run is not None else []
    return DiffSides(old_paths, new_paths, drift, chosen)
