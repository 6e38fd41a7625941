"""Shared fixtures: golden input folders, a CLI runner that lets bugs raise, and a fenced-off home."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from aoe_runner.cli.main import run

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_results"
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(autouse=True)
def _fenced_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No test writes into the real user's home: aoe-runner's home is a fresh temporary directory."""
    home = tmp_path_factory.mktemp("aoe-runner-home")
    monkeypatch.setenv("AOE_RUNNER_HOME", str(home))
    monkeypatch.setenv("AOE_RUNNER_LOCK_DIR", str(home / "locks"))  # device locks of tests never meet real runs'
    yield home


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run the CLI in-process without the crash boundary, so an unexpected exception fails the test."""

    def invoke(*argv: str) -> Result:
        code = run(list(argv))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return invoke


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    """A private copy of sample_results/, safe to modify."""
    copy = tmp_path / "samples"
    shutil.copytree(SAMPLES, copy)
    return copy


ON_REQUEST = ("fuzz", "coverage")  # long runs, only when named: python -m pytest -m fuzz
SLOW_FIXTURES = {"pg_server", "pg_url", "browser"}  # a PostgreSQL server (tests/store), headless Chromium (tests/render/html)


@pytest.hookimpl(tryfirst=True)  # before -m selects: the slow marker must be on every test that needs one
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that needs a PostgreSQL server or a browser is slow. Tests marked fuzz or coverage run only when `-m`
    names their marker, whatever else -m says (`-m "not slow"` keeps them out too)."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    named = str(config.getoption("markexpr") or "").replace("(", " ").replace(")", " ").split()
    dropped = [item for item in items if any(item.get_closest_marker(m) and m not in named for m in ON_REQUEST)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (root only): a full disk, for real."""
    import os
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    mount = tmp_path / "tiny"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", str(mount)], check=True)
