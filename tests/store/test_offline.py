"""Tuning never waits for the database: a run records locally when the server is down (or dies mid-run), says so,
and `runs push` makes the shared history whole, once. Reading commands stop in one line when it is down."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from aoe_runner.store import pg_index
from aoe_runner.store.pg_index import PgIndex
from tests.store.conftest import SharedHome
from tests.store.pg_server import PgServer
from tests.tune.runner import Home, aoe_runner, start_tune, tune, wait_for_output

UNREACHABLE = "postgresql://nobody@/aoe?host=/nonexistent-socket-dir&connect_timeout=2"


@pytest.fixture
def own_server(pg_server: PgServer) -> Iterator[PgServer]:  # pg_server: skipped or failed the same way without binaries
    server = PgServer.create()
    server.start()
    server.sql("CREATE DATABASE aoe")
    yield server
    server.remove()


def test_a_reading_command_on_an_unreachable_store_named_with_store_says_so_in_one_line(tmp_path: Path) -> None:
    """With --store URL the user asked for that store: no fallback to the local history (test_store_commands)."""
    home = Home(tmp_path)
    for command in (("runs", "list"), ("runs", "show", "latest"), ("bank", "best"), ("report", "--run", "latest")):
        done = aoe_runner(home, "--store", UNREACHABLE, *command)
        assert done.returncode == 4, (command, done.stderr)
        assert done.stderr.startswith("error: run store postgresql://nobody@/aoe?host=/nonexistent-socket-dir"), done.stderr
        assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    fallen_back = aoe_runner(SharedHome(tmp_path, UNREACHABLE), "runs", "list")  # AOE_RUNNER_STORE chose it
    assert fallen_back.returncode == 0 and fallen_back.stdout == "no runs recorded\n"
    assert len(fallen_back.stderr.splitlines()) == 1 and "reading this host's history instead" in fallen_back.stderr


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


@pytest.mark.parametrize("table", ["runs", "aoe_runner_schema"])
def test_a_lock_never_released_costs_a_run_seconds_and_push_sends_it_later(tmp_path: Path, pg_url: str, table: str) -> None:
    """Another session holding `LOCK TABLE runs` kept tune waiting for ever, deaf to Ctrl-C: the lock wait now gives
    up after LOCK_LIMIT_S, and for a minute after that the store is not asked again. The schema check on connecting
    had no limit of its own (13 s, then a backend left waiting)."""
    PgIndex(pg_url, "store").check_writable()  # the schema exists
    home = SharedHome(tmp_path, pg_url)
    with psycopg.connect(pg_url) as locker:
        locker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")  # held until this block ends
        started = time.monotonic()
        code, _, err = tune(home, "exit", "0")
        took = time.monotonic() - started
    assert code == 0, err
    assert "lock timeout" in err and err.count("recorded on this host only") == 1, err
    assert took < 2 * pg_index.LOCK_LIMIT_S + 10  # the check before the start, then nothing until the minute is over
    pushed = aoe_runner(home, "runs", "push")
    assert "pushed 1 run" in pushed.stderr, pushed.stderr


def _server_processes(server: PgServer) -> list[psutil.Process]:
    postmaster = psutil.Process(int((server.data / "postmaster.pid").read_text().split()[0]))
    return [postmaster, *postmaster.children(recursive=True)]


def _signal_all(processes: list[psutil.Process], resume: bool) -> None:
    """Suspend or resume the server's processes; one that has ended meanwhile (a backend closing) is left."""
    for process in processes:
        try:
            process.resume() if resume else process.suspend()
        except psutil.NoSuchProcess:
            pass


def test_a_server_that_stops_answering_mid_run_is_cut_off_and_the_run_ends(tmp_path: Path, own_server: PgServer) -> None:
    """A server that stops answering (here SIGSTOP: the kernel still takes our bytes, so no TCP limit can fire) held
    tune at the run's end for ever, and SIGTERM did not help: the server's own limits cannot act, and psycopg's
    cancel request went unanswered too. The connection is now cut from our side."""
    home = SharedHome(tmp_path, own_server.url("aoe"))
    process = start_tune(home, "sleep", "1")
    wait_for_output(process, "recording to", stream="stderr")
    stopped = _server_processes(own_server)
    _signal_all(stopped, resume=False)
    try:
        time.sleep(2)  # the script has ended: tune waits for the server to take the run's end
        process.send_signal(signal.SIGTERM)  # counted, read once the record is finished
        _, err = process.communicate(timeout=pg_index.WRITE_LIMIT_S + pg_index.WATCHDOG_MARGIN_S + 30)
    finally:
        _signal_all(stopped, resume=True)
    limit = pg_index.WRITE_LIMIT_S + pg_index.WATCHDOG_MARGIN_S
    assert f"no answer from the server in {limit} s" in err and "recorded on this host only" in err, err
    assert process.returncode == 0, err  # the script's own code: SIGTERM came after it ended
    (manifest,) = home.manifests()
    assert manifest["status"] == "succeeded"
    pushed = aoe_runner(home, "runs", "push")
    assert "pushed 1 run" in pushed.stderr, pushed.stderr


def test_the_urls_options_and_pgoptions_keep_their_settings(tmp_path: Path, pg_url: str) -> None:
    """Our TimeZone went in as connect(options=...), which replaced the URL's options and PGOPTIONS: a team's
    search_path was dropped and the tables were made in public."""
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE SCHEMA team_a")
        db.execute("CREATE SCHEMA team_b")
    in_url = SharedHome(tmp_path / "url", f"{pg_url}&options=-c%20search_path%3Dteam_a")
    code, _, err = tune(in_url, "exit", "0")
    assert code == 0 and "recorded on this host only" not in err, err
    by_env = SharedHome(tmp_path / "env", pg_url)
    os.environ["PGOPTIONS"] = "-c search_path=team_b"
    try:
        code, _, err = tune(by_env, "exit", "0")
    finally:
        del os.environ["PGOPTIONS"]
    assert code == 0 and "recorded on this host only" not in err, err
    with psycopg.connect(pg_url) as db:
        tables = db.execute("SELECT table_schema FROM information_schema.tables WHERE table_name = 'runs'").fetchall()
        assert sorted(tables) == [("team_a",), ("team_b",)]
        assert db.execute("SELECT count(*) FROM team_a.runs").fetchone() == (1,)


def test_a_schema_upgraded_by_another_host_mid_run_leaves_the_run_recorded_here(tmp_path: Path, pg_url: str) -> None:
    """An aoe-runner newer than this one upgraded the store during the run: the run's end exited 5 after the
    script's 0. The store is now left out of that run, with one warning, as when it is down."""
    home = SharedHome(tmp_path, pg_url)
    process = start_tune(home, "sleep", "1")
    wait_for_output(process, "recording to", stream="stderr")
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("UPDATE aoe_runner_schema SET version = version + 1")
        db.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()"
        )
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "newer than this aoe-runner knows" in err and "recorded on this host only" in err, err
    assert home.only_manifest()["status"] == "succeeded"


def test_a_server_that_takes_no_connection_is_waited_for_once(tmp_path: Path, own_server: PgServer) -> None:
    """A connect timeout did not count as running out of time: each of a run's writes waited 5 s again (verify with
    three repeats: 66 s)."""
    home = SharedHome(tmp_path, own_server.url("aoe"))
    stopped = _server_processes(own_server)
    _signal_all(stopped, resume=False)
    try:
        started = time.monotonic()
        code, _, err = tune(home, "exit", "0")
        took = time.monotonic() - started
    finally:
        _signal_all(stopped, resume=True)
    assert code == 0 and "connection timeout expired" in err and err.count("recorded on this host only") == 1, err
    assert took < 2 * pg_index.CONNECT_TIMEOUT_S


def test_push_passes_over_a_run_the_server_refuses_and_sends_the_others(tmp_path: Path, pg_server: PgServer) -> None:
    """A run the store could not take (here a name a LATIN1 database cannot hold) stopped every later push at it."""
    pg_server.sql(f"CREATE DATABASE latin_{os.getpid()} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
    home = SharedHome(tmp_path, pg_server.url(f"latin_{os.getpid()}"))
    script = tmp_path / "训练.py"
    script.write_text("print('step 1')\n")
    refused = aoe_runner(home, "tune", str(script), "--framework", "tf", "--mode", "op", "--force")
    assert refused.returncode == 0 and "recorded on this host only" in refused.stderr, refused.stderr
    code, _, err = tune(SharedHome(tmp_path, UNREACHABLE), "exit", "0")  # a later run, recorded while the store was down
    assert code == 0, err
    pushed = aoe_runner(home, "runs", "push")
    assert pushed.returncode == 4, pushed.stderr
    assert "has no equivalent in encoding" in pushed.stderr and "(not pushed)" in pushed.stderr
    assert "pushed 1 run to" in pushed.stderr and "0 already there; 1 refused by the server" in pushed.stderr
