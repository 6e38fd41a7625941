"""Tuning never waits for the database: a run records locally when the server is down (or dies mid-run), says so,
and `runs push` makes the shared history whole, once. Reading commands stop in one line when it is down."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.store.conftest import SharedHome
from tests.store.pg_server import PgServer
from tests.tune.runner import aoe_runner, start_tune, tune, wait_for_output

UNREACHABLE = "postgresql://nobody@/aoe?host=/nonexistent-socket-dir&connect_timeout=2"


@pytest.fixture
def own_server(pg_server: PgServer) -> Iterator[PgServer]:  # pg_server: skipped or failed the same way without binaries
    server = PgServer.create()
    server.start()
    server.sql("CREATE DATABASE aoe")
    yield server
    server.remove()


def test_a_reading_command_on_an_unreachable_store_says_so_in_one_line(tmp_path: Path) -> None:
    home = SharedHome(tmp_path, UNREACHABLE)
    for command in (("runs", "list"), ("runs", "show", "latest"), ("bank", "best"), ("report", "--run", "latest")):
        done = aoe_runner(home, *command)
        assert done.returncode == 4, (command, done.stderr)
        assert done.stderr.startswith("error: run store postgresql://nobody@/aoe?host=/nonexistent-socket-dir"), done.stderr
        assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


def test_tune_with_the_store_down_records_locally_and_push_uploads_it_once(tmp_path: Path, pg_url: str) -> None:
    down = SharedHome(tmp_path, UNREACHABLE)
    code, _, err = tune(down, "progress", "--reports", "2", "--interval", "0.05")
    assert code == 0, err
    assert "recorded on this host only" in err and "'aoe-runner runs push' uploads it" in err
    (manifest,) = down.manifests()
    up = SharedHome(tmp_path, pg_url)
    first = aoe_runner(up, "runs", "push")
    assert (first.returncode, first.stderr.split(";")[0]) == (0, f"pushed 1 run to {pg_url}")
    second = aoe_runner(up, "runs", "push")
    assert "pushed 0 runs" in second.stderr and "1 already there" in second.stderr
    with psycopg.connect(pg_url) as db:
        assert db.execute("SELECT id, status FROM runs").fetchall() == [(manifest["id"], "succeeded")]


def test_a_server_killed_mid_run_loses_nothing_once_pushed(tmp_path: Path, own_server: PgServer) -> None:
    url = own_server.url("aoe")
    home = SharedHome(tmp_path, url)
    process = start_tune(home, "progress", "--reports", "4", "--interval", "0.5")
    wait_for_output(process, "step 1.0:")  # the first of four reports is written
    own_server.stop("immediate")  # killed: no clean shutdown
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "recorded on this host only" in err
    (manifest,) = home.manifests()
    assert manifest["status"] == "succeeded"
    own_server.start()
    with psycopg.connect(url) as db:  # the shared store saw the start only
        assert db.execute("SELECT status FROM runs").fetchall() == [("running",)]
    pushed = aoe_runner(home, "runs", "push")
    assert "pushed 1 run" in pushed.stderr, pushed.stderr
    shown = json.loads(aoe_runner(home, "runs", "show", manifest["id"], "--json").stdout)
    assert shown == manifest
    with psycopg.connect(url) as db:
        assert db.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall() == [("succeeded", 1)]


def test_a_run_started_while_the_server_was_down_reaches_it_at_its_end(tmp_path: Path, own_server: PgServer) -> None:
    url = own_server.url("aoe")
    own_server.stop("immediate")
    home = SharedHome(tmp_path, url)
    process = start_tune(home, "progress", "--reports", "4", "--interval", "0.5")
    wait_for_output(process, "step 1.0:")
    own_server.start()
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert err.count("recorded on this host only") == 1
    (manifest,) = home.manifests()
    assert f"is reachable again: run {manifest['id']} is recorded there" in err
    with psycopg.connect(url) as db:
        assert db.execute("SELECT id, status FROM runs").fetchall() == [(manifest["id"], "succeeded")]


def test_push_uploads_a_history_recorded_before_the_shared_store_even_with_shared_artifacts(tmp_path: Path, pg_url: str) -> None:
    before = SharedHome(tmp_path, "local")
    code, _, err = tune(before, "progress", "--reports", "2", "--interval", "0.05")
    assert code == 0, err
    (old,) = before.manifests()
    (tmp_path / "home" / "runs.db").unlink()  # rebuilt by the next command: this host's runs must stay in it
    shared = SharedHome(tmp_path, pg_url, tmp_path / "nfs")
    code, _, err = tune(shared, "exit", "0")
    assert code == 0, err
    pushed = aoe_runner(shared, "runs", "push")
    assert "pushed 1 run" in pushed.stderr and "1 already there" in pushed.stderr, pushed.stderr
    report = aoe_runner(shared, "report", "--run", old["id"], "--format", "json")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["totals"]["operators"] == 4
    with psycopg.connect(pg_url) as db:
        (artifacts,) = db.execute("SELECT artifacts FROM runs WHERE id = %s", (old["id"],)).fetchone()
    assert artifacts.endswith(f":{tmp_path / 'home' / 'runs' / old['id']}")  # on this host, not in the shared directory
