"""A team's history in PostgreSQL: tune records there, every reading command reads there, runs of other
hosts are listed, shown and compared, and the store is chosen by --store, AOE_RUNNER_STORE or `store init`."""

from __future__ import annotations

import json
import os
import shutil
import socket
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from aoe_runner.common.jsontext import dump_json, load_json
from aoe_runner.runs.manifest import RunManifest
from aoe_runner.store import pg_schema
from aoe_runner.store.pg_index import PgIndex
from tests.store.conftest import SharedHome, as_host
from tests.tune.runner import SIMULATOR, Home, aoe_runner, tune

HOST = socket.gethostname()


def tune_ok(home: Home) -> str:
    code, _, err = tune(home, "progress", "--reports", "2", "--interval", "0.05")
    assert code == 0, err
    assert "recorded on this host only" not in err
    return json.loads(aoe_runner(home, "runs", "list", "--json", "--limit", "1").stdout)["id"]


def listed(home: Home, *options: str) -> list[dict]:
    done = aoe_runner(home, "runs", "list", "--json", "--all", *options)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_tune_records_in_the_shared_store_and_reading_commands_read_it(shared_home: SharedHome) -> None:
    run_id = tune_ok(shared_home)
    with psycopg.connect(shared_home.url) as db:
        (status, host, manifest) = db.execute("SELECT status, host, manifest FROM runs WHERE id = %s", (run_id,)).fetchone()
    assert (status, host, manifest["id"]) == ("succeeded", HOST, run_id)
    assert [row["host"] for row in listed(shared_home, "--host", HOST)] == [HOST]
    assert listed(shared_home, "--host", "elsewhere") == []
    assert listed(shared_home, "--soc", "Ascend910B3") == []  # the simulator's host has no SoC
    shown = aoe_runner(shared_home, "runs", "show", run_id)
    assert f"host       {HOST}," in shown.stdout
    report = aoe_runner(shared_home, "report", "--run", run_id, "--format", "json")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["totals"]["operators"] == 4
    best = aoe_runner(shared_home, "bank", "best", "--script", "train.py", "--json")
    assert best.returncode == 0, best.stderr
    assert {json.loads(line)["run"] for line in best.stdout.splitlines()} == {run_id}


def test_runs_of_other_hosts_are_listed_and_shown_but_their_local_artifacts_are_not_read(
    shared_home: SharedHome, template: RunManifest
) -> None:
    index = PgIndex(shared_home.url, "store")
    for number, (host, soc) in enumerate([("host-b", "Ascend910B3"), ("host-b", "Ascend910B4"), ("host-c", "Ascend910B3")]):
        manifest = as_host(template, f"20260102-00000{number}-0000000{number}", host, soc, minutes=number)
        index.record(manifest, f"{host}:/var/lib/aoe-runner/runs/{manifest.id}")
    assert [row["id"][-1] for row in listed(shared_home, "--host", "host-b")] == ["1", "0"]
    assert [row["host"] for row in listed(shared_home, "--soc", "Ascend910B3")] == ["host-c", "host-b"]
    assert [row["id"][-1] for row in listed(shared_home, "--host", "host-b", "--soc", "Ascend910B4")] == ["1"]
    shown = aoe_runner(shared_home, "runs", "show", "20260102-000001")
    assert shown.returncode == 0, shown.stderr
    assert "host       host-b, CANN" in shown.stdout
    assert "  record     /var/lib/aoe-runner/runs/20260102-000001-00000001 (on host-b; not reachable from here)\n" in shown.stdout
    report = aoe_runner(shared_home, "report", "--run", "20260102-000001-00000001")
    assert report.returncode == 4
    assert report.stderr.strip().splitlines() == [
        "error: 20260102-000001-00000001: its artifacts are on host host-b (/var/lib/aoe-runner/runs/20260102-000001-00000001), "
        "not reachable from here (set AOE_RUNNER_ARTIFACTS to a directory every host mounts)"
    ]


def test_with_shared_artifacts_another_host_reports_and_diffs_across_hosts_with_the_drift_check(
    tmp_path: Path, pg_url: str
) -> None:
    artifacts = tmp_path / "nfs"
    host_a = SharedHome(tmp_path / "a", pg_url, artifacts)
    first, second = tune_ok(host_a), tune_ok(host_a)
    assert (artifacts / "runs" / first / "manifest.json").is_file()
    # the second run, as if host-b had recorded it on another SoC: its artifacts in the shared directory
    moved = artifacts / "runs" / f"{second}-b"
    shutil.copytree(artifacts / "runs" / second, moved)
    manifest = load_json(RunManifest, (moved / "manifest.json").read_text())
    other = replace(manifest, id=moved.name, fingerprint=replace(manifest.fingerprint, hostname="host-b", soc="Ascend910B4"))
    (moved / "manifest.json").write_text(dump_json(other))
    PgIndex(pg_url, "store").record(other, str(moved))
    host_b = SharedHome(tmp_path / "b", pg_url, artifacts)  # another home: nothing of these runs is local to it
    assert aoe_runner(host_b, "report", "--run", first, "--run", other.id).returncode == 0
    refused = aoe_runner(host_b, "report", "--diff", first, other.id)
    assert refused.returncode == 5
    assert "SoC None != Ascend910B4" in refused.stderr or "SoC unknown != Ascend910B4" in refused.stderr
    allowed = aoe_runner(host_b, "report", "--diff", first, other.id, "--allow-env-drift")
    assert allowed.returncode == 0, allowed.stderr


def test_the_store_is_chosen_by_option_then_environment_then_store_init(tmp_path: Path, pg_url: str) -> None:
    home = Home(tmp_path)
    assert aoe_runner(home, "runs", "list").stdout == "no runs recorded\n"
    init = aoe_runner(home, "store", "init", pg_url)
    assert init.returncode == 0, init.stderr
    assert f"ready (schema version {pg_schema.LATEST})" in init.stderr
    assert "runs push" not in init.stderr  # nothing recorded here before: nothing to push
    config = (tmp_path / "home" / "store.conf").read_text()
    assert f"url = {pg_url}" in config
    tune_ok(home)  # recorded in the store that store init chose
    assert len(listed(home)) == 1
    with psycopg.connect(pg_url) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    local = aoe_runner(home, "--store", "local", "runs", "list", "--json")
    assert len(local.stdout.splitlines()) == 1  # the local record of the same run
    wrong = aoe_runner(home, "--store", "mysql://x@y/z", "runs", "list")
    assert (wrong.returncode, wrong.stderr) == (
        2,
        "error: --store: 'mysql://x@y/z' is not a postgresql:// URL (or 'local') (see 'aoe-runner --help')\n",
    )


def test_commands_that_need_a_shared_store_say_so(tmp_path: Path) -> None:
    done = aoe_runner(Home(tmp_path), "runs", "push")
    assert done.returncode == 2
    assert "runs push needs a shared store" in done.stderr


def test_prune_and_rm_act_on_the_local_history_only_and_say_so(shared_home: SharedHome) -> None:
    run_id = tune_ok(shared_home)
    for command in (("runs", "prune", "--keep", "0", "--yes"), ("runs", "rm", run_id)):
        refused = aoe_runner(shared_home, *command)
        assert refused.returncode == 2
        assert "removes runs from this host's local history only: run it with --store local" in refused.stderr
    assert aoe_runner(shared_home, "--store", "local", "runs", "rm", run_id).returncode == 0
    assert [row["id"] for row in listed(shared_home)] == [run_id]  # still in the shared store


def test_verify_records_its_runs_in_the_shared_store(shared_home: SharedHome) -> None:
    (shared_home.root / "bank").mkdir()
    (shared_home.root / "bank" / "op.bin").write_bytes(b"tuned")
    done = aoe_runner(
        shared_home,
        "verify",
        str(SIMULATOR),
        "--bank",
        "bank",
        "--repeats",
        "1",
        "-f",
        "json",
        "--",
        "steps",
        "20",
        "--bank-factor",
        "0.8",
    )
    assert done.returncode in (0, 1), done.stderr
    assert "recorded on this host only" not in done.stderr
    assert sorted(row["mode"] for row in listed(shared_home, "--kind", "verify")) == ["verify:baseline", "verify:tuned"]


def test_a_row_changed_by_hand_is_skipped_with_a_warning_and_the_others_are_listed(shared_home: SharedHome) -> None:
    """A status this aoe-runner does not know (set by hand, or by a newer one) crashed runs list and runs report."""
    first, second = tune_ok(shared_home), tune_ok(shared_home)
    with psycopg.connect(shared_home.url, autocommit=True) as db:
        db.execute("UPDATE runs SET status = 'paused' WHERE id = %s", (first,))
    for command in (("runs", "list", "--json"), ("runs", "report", "-o", "history.html")):
        done = aoe_runner(shared_home, *command)
        assert done.returncode == 0, done.stderr
        assert (
            f"warning: {first}: its row in the run store cannot be read ('paused' is not a valid RunStatus); skipped"
            in done.stderr
        )
    assert [row["id"] for row in listed(shared_home)] == [second]


def test_a_script_whose_name_is_not_utf8_reaches_the_store(shared_home: SharedHome) -> None:
    """jsonb refused the manifest's `\\udcff` escape: the run, and every later one, stayed on this host only, and the
    warning blamed the server. The store's copy holds the escape as text, as its index columns do."""
    script = shared_home.root / os.fsdecode(b"tr\xffain.py")
    shutil.copy(SIMULATOR, script)
    done = aoe_runner(shared_home, "tune", str(script), "--framework", "tf", "--mode", "op", "--force", "--", "exit", "0")
    assert done.returncode == 0 and "recorded on this host only" not in done.stderr, done.stderr
    with psycopg.connect(shared_home.url) as db:
        (stored,) = db.execute("SELECT manifest->>'script' FROM runs").fetchone()  # type: ignore[misc]
    assert stored == str(shared_home.root / "tr\\udcffain.py")
    assert listed(shared_home)[0]["script"] == str(shared_home.root / "tr\\udcffain.py")
    assert shared_home.only_manifest()["script"] == str(script)  # the local record keeps the exact name


def test_push_sends_the_operator_results_of_runs_recorded_before_the_store_kept_them(shared_home: SharedHome) -> None:
    """Migrating from version 2 left run_results empty for the runs already there, and push, seeing their status and
    end time, never sent them again: `bank best` did not know them."""
    run_id = tune_ok(shared_home)
    with psycopg.connect(shared_home.url, autocommit=True) as db:  # what a version-2 store migrated to the latest holds
        db.execute("DELETE FROM run_results")
        db.execute("UPDATE runs SET results_recorded = false")
    pushed = aoe_runner(shared_home, "runs", "push")
    assert "pushed 1 run" in pushed.stderr, pushed.stderr
    best = aoe_runner(shared_home, "bank", "best", "--json")
    assert {json.loads(line)["run"] for line in best.stdout.splitlines()} == {run_id}
    again = aoe_runner(shared_home, "runs", "push")
    assert "pushed 0 runs" in again.stderr, again.stderr


def test_a_shared_listing_has_each_runs_gain_from_the_results_its_host_sent_and_its_host(shared_home: SharedHome) -> None:
    run_id = tune_ok(shared_home)
    (shared,) = listed(shared_home)
    done = aoe_runner(shared_home, "--store", "local", "runs", "list", "--json")  # from this host's result files
    (local,) = map(json.loads, done.stdout.splitlines())
    assert shared["id"] == local["id"] == run_id and local["saved_us"] > 0
    assert shared["saved_us"] == pytest.approx(local["saved_us"])
    assert shared["median_speedup"] == pytest.approx(local["median_speedup"])
    table = aoe_runner(shared_home, "runs", "list", "--wide").stdout.splitlines()
    assert table[0].split()[:7] == ["run", "started", "status", "mode", "saved", "speed-up", "host"]
    assert socket.gethostname() in table[2].split()
    assert "host" not in aoe_runner(shared_home, "--store", "local", "runs", "list", "--wide").stdout.splitlines()[0].split()


def _database(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).path.lstrip("/")


@pytest.mark.parametrize(
    "setting",
    [
        "PGCLIENTENCODING=LATIN1",  # UnicodeEncodeError: exit 3 before the script ran
        "SET client_encoding = 'SQL_ASCII'",  # text came back as bytes: every row skipped, b'operator' in bank best
        "SET datestyle = 'SQL, DMY'",  # psycopg cannot read those timestamps: exit 3
        "PGOPTIONS=-c DateStyle=German",
        "SET extra_float_digits = -15",  # 1.909x shown as 2.000x
    ],
)
def test_the_servers_and_the_users_session_settings_do_not_change_what_is_stored_or_read(
    shared_home: SharedHome, setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if setting.startswith("SET "):
        with psycopg.connect(shared_home.url, autocommit=True) as db:
            name, value = setting.removeprefix("SET ").split(" = ")
            db.execute(f"ALTER DATABASE {_database(shared_home.url)} SET {name} = {value}")
    else:
        variable, value = setting.split("=", 1)
        monkeypatch.setenv(variable, value)  # the aoe-runner processes inherit it
    script = shared_home.root / "训练.py"
    shutil.copy(SIMULATOR, script)
    done = aoe_runner(
        shared_home, "tune", str(script), "--mode", "op", "--force", "--", "progress", "--reports", "2", "--interval", "0"
    )
    assert done.returncode == 0 and "recorded on this host only" not in done.stderr, done.stderr
    (row,) = listed(shared_home)
    assert row["script"] == str(script) and row["status"] == "succeeded"
    shown = aoe_runner(shared_home, "runs", "show", row["id"], "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["started_at"] == shared_home.only_manifest()["started_at"]
    best = aoe_runner(shared_home, "bank", "best", "--json")
    assert best.returncode == 0, best.stderr
    speedups = {json.loads(line)["name"]: json.loads(line)["speedup"] for line in best.stdout.splitlines()}
    assert speedups["layer_0/MatMul_1 [MatMulV2] (Schedule)"] == 21 / 11


def test_a_nul_in_a_log_line_quoted_by_the_manifest_reaches_the_store(shared_home: SharedHome) -> None:
    """jsonb refused the manifest's \\u0000: the run stayed 'running' in the store, and every later push stopped at it."""
    script = shared_home.root / "train.py"
    script.write_text("print('[Aoe]Aoe process finished,cost\\x00 time 3s.', flush=True)\n")
    done = aoe_runner(shared_home, "tune", str(script), "--framework", "tf", "--mode", "op", "--force")
    assert done.returncode == 0 and "recorded on this host only" not in done.stderr, done.stderr
    with psycopg.connect(shared_home.url) as db:
        (status, markers) = db.execute("SELECT status, manifest->>'markers' FROM runs").fetchone()  # type: ignore[misc]
    assert status == "succeeded" and "cost\\\\x00 time" in markers


def test_a_store_upgraded_by_a_newer_aoe_runner_is_not_written_to(shared_home: SharedHome) -> None:
    """Warned once that the schema was newer, tune then wrote its start and end into it anyway: the check ran only
    when connecting, and the connection that failed it was kept."""
    tune_ok(shared_home)
    with psycopg.connect(shared_home.url, autocommit=True) as db:
        db.execute("UPDATE aoe_runner_schema SET version = version + 1")
    code, _, err = tune(shared_home, "exit", "0")
    assert code == 0 and "newer than this aoe-runner knows" in err, err
    with psycopg.connect(shared_home.url) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (1,)


def test_a_stored_record_this_aoe_runner_cannot_read_is_one_line(shared_home: SharedHome, template: RunManifest) -> None:
    index = PgIndex(shared_home.url, "store")
    other = as_host(template, "20260101-000000-0000beef", "host-b")
    index.record(other, "host-b:/elsewhere")
    with psycopg.connect(shared_home.url, autocommit=True) as db:
        db.execute("UPDATE runs SET manifest = jsonb_set(manifest, '{status}', '\"paused\"')")
    for command in (("runs", "show", other.id), ("report", "--run", other.id)):
        done = aoe_runner(shared_home, *command)
        assert done.returncode == 4, done.stderr
        assert done.stderr.startswith(f"error: {other.id}: its record in the run store cannot be read (status: ")


def test_another_homes_run_is_not_taken_into_this_homes_history(tmp_path: Path, pg_url: str) -> None:
    """Two homes on one host (two users) share a store. A run of the first whose end the store missed was settled by
    the second's `runs list`, which put it into the second's local index, and its push then failed with exit 4."""
    first, second = SharedHome(tmp_path / "a", pg_url), SharedHome(tmp_path / "b", pg_url)
    run_id = tune_ok(first)
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("UPDATE runs SET status = 'running', ended_at = NULL")  # its end record was lost
    assert aoe_runner(second, "runs", "list").returncode == 0
    assert aoe_runner(second, "--store", "local", "runs", "list").stdout == "no runs recorded\n"
    pushed = aoe_runner(second, "runs", "push")
    assert pushed.returncode == 0, pushed.stderr
    assert run_id not in pushed.stderr


def test_store_init_says_how_to_send_the_runs_recorded_before(tmp_path: Path, pg_url: str) -> None:
    home = Home(tmp_path)
    tune_ok(home)  # recorded locally: no store chosen yet
    init = aoe_runner(home, "store", "init", pg_url)
    assert init.returncode == 0, init.stderr
    assert "1 run recorded on this host before: 'aoe-runner runs push' sends local runs to the store" in init.stderr
