"""Bank versions in the shared PostgreSQL store: published on one host, pulled on another byte for byte from the
artifacts directory both mount; two hosts publishing one name get two numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.releases.conftest import WRITER, tree
from tests.store.conftest import SharedHome
from tests.tune.runner import aoe_runner


def _tune_files(home: SharedHome, *files: str) -> str:
    (home.root / "bank").mkdir(exist_ok=True)
    command = [sys.executable, "-m", "aoe_runner", "-q", "tune", str(WRITER), "--mode", "op", "--force", "--framework", "tf"]
    done = subprocess.run([*command, "--bank", "bank", "--", *files], env=home.env, cwd=home.root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(aoe_runner(home, "runs", "list", "--json").stdout.splitlines()[0])["id"]


def test_a_version_published_on_one_host_is_pulled_on_another(tmp_path: Path, pg_url: str) -> None:
    artifacts = tmp_path / "artifacts"
    tuner, trainer = (SharedHome(tmp_path / name, pg_url, artifacts) for name in ("tuner", "trainer"))
    run = _tune_files(tuner, "Ascend910B3/cube/a.bin=tuned", "Ascend910B3/unified_bank/b.json={}")
    tuned = tree(tuner.root / "bank")
    with ThreadPoolExecutor(2) as pool:  # the database numbers them: never one number twice
        done = list(pool.map(lambda _: aoe_runner(tuner, "bank", "publish", run, "--name", "resnet", "--unverified"), range(2)))
    assert all(result.returncode == 0 for result in done), [result.stderr for result in done]
    listed = aoe_runner(trainer, "bank", "versions", "resnet", "--json")
    assert [json.loads(line)["number"] for line in listed.stdout.splitlines()] == [1, 2]
    target = tmp_path / "train-bank"
    pulled = aoe_runner(trainer, "bank", "pull", "resnet@2", "--to", str(target))
    assert pulled.returncode == 0, pulled.stderr
    assert tree(target) == tuned
    assert not (trainer.root / "home" / "blobs").exists()  # the contents came from the artifacts directory
