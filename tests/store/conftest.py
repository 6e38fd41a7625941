"""One real PostgreSQL server per test session (initdb + pg_ctl in a temporary directory), a fresh database per test.

Without the server binaries the tests that need it are skipped with the reason, except in CI (CI=true), where that
is a failure: `.ci/run` installs the server.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from aoe_runner.runs.manifest import RunManifest
from tests.store.pg_server import PgServer, server_binaries
from tests.tune.runner import Home, tune

_numbers = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    if server_binaries() is None:
        reason = "PostgreSQL server binaries (initdb, pg_ctl) are not installed: apt-get install postgresql"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI must run these tests)")
        pytest.skip(reason)
    server = PgServer.create()
    server.start()
    yield server
    server.remove()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A URL of a new, empty database on the session's server."""
    name = f"test_{os.getpid()}_{next(_numbers)}"
    pg_server.sql(f"CREATE DATABASE {name}")
    return pg_server.url(name)


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> RunManifest:
    """A real tuning run's manifest (recorded in a local store), to copy as other hosts' runs."""
    home = Home(tmp_path_factory.mktemp("template"))
    code, _, err = tune(home, "progress", "--reports", "2", "--interval", "0.05")
    assert code == 0, err
    return TypeAdapter(RunManifest).validate_python(home.only_manifest())


def as_host(template: RunManifest, run_id: str, host: str, soc: str = "Ascend910B3", minutes: int = 0) -> RunManifest:
    """The template as a run of another host, started `minutes` after it."""
    fingerprint = replace(template.fingerprint, hostname=host, soc=soc)
    started = template.started_at + timedelta(minutes=minutes)
    return replace(template, id=run_id, fingerprint=fingerprint, started_at=started, ended_at=started)


@pytest.fixture
def shared_home(tmp_path: Path, pg_url: str) -> Home:
    """A Home whose environment points aoe-runner at a fresh shared store."""
    return SharedHome(tmp_path, pg_url)


class SharedHome(Home):
    def __init__(self, root: Path, url: str, artifacts: Path | None = None) -> None:
        super().__init__(root)
        root.mkdir(parents=True, exist_ok=True)
        self.url = url
        self.artifacts = artifacts

    @property
    def env(self) -> dict[str, str]:
        extra = {"AOE_RUNNER_STORE": self.url}
        if self.artifacts is not None:
            extra["AOE_RUNNER_ARTIFACTS"] = str(self.artifacts)
        return {**super().env, **extra}
