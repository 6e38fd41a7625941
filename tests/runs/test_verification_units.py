"""A verification's runs (its baseline and tuned arms, every repeat) are kept or removed together by `runs prune` and
`runs rm`, and prune says what kinds it kept (issue 42, finding 14: `--keep 1` kept the tuned arm and removed its
baseline twin)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.tune.runner import SIMULATOR, Home, aoe_runner, tune

pytestmark = pytest.mark.slow  # a real verification of four runs


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """A tuning run, then a verification of it: 2 repeats, so 4 verify runs, all newer than the tuning run."""
    home = Home(tmp_path_factory.mktemp("units"))
    code, _, err = tune(home, "progress", options=("--bank", "bank"))
    assert code == 0, err
    done = aoe_runner(home, "verify", str(SIMULATOR), "--bank", "bank", "--repeats", "2", "--", "steps", "10")
    assert done.returncode in (0, 1), done.stderr
    return home


def _kinds(home: Home) -> list[str]:
    return sorted(manifest["kind"] for manifest in home.manifests())


def test_keep_1_keeps_the_whole_verification(history: Home) -> None:
    done = aoe_runner(history, "runs", "prune", "--keep", "1")
    assert done.returncode == 0, done.stderr
    tuning = next(manifest["id"] for manifest in history.manifests() if manifest["kind"] == "tune")
    assert [line.split()[2] for line in done.stdout.splitlines() if line.startswith("would remove 20")] == [tuning]
    assert "would keep 0 tuning runs, 1 verification (4 runs)" in done.stderr, done.stderr


def test_removing_one_arm_removes_its_verification(history: Home) -> None:
    verify_run = next(manifest["id"] for manifest in history.manifests() if manifest["kind"] == "verify")
    done = aoe_runner(history, "runs", "rm", "--dry-run", verify_run)
    assert done.returncode == 0, done.stderr
    assert f"run {verify_run} is one of the 4 runs of verification" in done.stderr
    assert len([line for line in done.stdout.splitlines() if line.startswith("would remove 20")]) == 4


def test_removing_a_verification_removes_its_scratch_directory(history: Home, tmp_path: Path) -> None:
    copy = Home(tmp_path)
    shutil.copytree(history.root / "home", tmp_path / "home", symlinks=True)
    (verification,) = (tmp_path / "home" / "verifications").iterdir()
    verify_run = next(manifest["id"] for manifest in copy.manifests() if manifest["kind"] == "verify")
    done = aoe_runner(copy, "runs", "rm", verify_run)
    assert done.returncode == 0, done.stderr
    assert _kinds(copy) == ["tune"] and not verification.exists()


def test_a_filter_that_matches_part_of_a_verification_removes_none_of_it(history: Home, tmp_path: Path) -> None:
    copy = Home(tmp_path)
    shutil.copytree(history.root / "home", tmp_path / "home", symlinks=True)
    (tmp_path / "home" / "runs.db").unlink()  # rebuilt from the manifests, one of them edited below
    baseline = next(
        path for path in (tmp_path / "home" / "runs").glob("*/manifest.json") if '"arm": "baseline"' in path.read_text()
    )
    manifest = json.loads(baseline.read_text())
    manifest["status"] = "failed"
    baseline.write_text(json.dumps(manifest))
    done = aoe_runner(copy, "runs", "prune", "--status", "failed", "--yes")
    assert done.returncode == 0, done.stderr
    assert "removed 0 runs" in done.stdout and "kept 1 tuning run, 1 verification (4 runs)" in done.stderr, done.stderr
    assert _kinds(copy) == ["tune", "verify", "verify", "verify", "verify"]
