"""`store status` and `store use`, and reading commands that fall back to this host's history when the shared store
cannot be reached: through the real CLI, on a real PostgreSQL server and on a port where nothing listens."""

from __future__ import annotations

import json
from pathlib import Path

from tests.store.conftest import SharedHome
from tests.tune.runner import Home, aoe_runner, tune

NOBODY = "postgresql://aoe@127.0.0.1:9/aoe"  # the discard port: nothing listens, the connection is refused at once


def _tune(home: Home, *options: str) -> str:
    code, _, err = tune(home, "progress", "--reports", "2", "--interval", "0")
    assert code == 0, err
    return json.loads(aoe_runner(home, *options, "runs", "list", "--json", "--limit", "1").stdout)["id"]


def test_status_of_the_local_store_counts_this_hosts_runs(tmp_path: Path) -> None:
    home = Home(tmp_path)
    _tune(home)
    done = aoe_runner(home, "store", "status")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        f"store      local (chosen by default)\nruns       1 run in this host's history ({home.root / 'home'})\n"
    )
    status = json.loads(aoe_runner(home, "store", "status", "--json").stdout)
    assert (status["store"], status["shared"], status["local_runs"], status["reachable"]) == ("local", False, 1, None)


def test_status_of_a_shared_store_says_what_this_host_has_not_pushed(shared_home: SharedHome) -> None:
    _tune(shared_home)
    status = json.loads(aoe_runner(shared_home, "store", "status", "--json").stdout)
    assert (status["reachable"], status["runs"], status["hosts"], status["not_pushed"]) == (True, 1, 1, 0)
    assert status["source"] == "AOE_RUNNER_STORE"
    code, _, err = tune(shared_home, "progress", "--reports", "1", "--interval", "0")  # recorded here only
    assert code == 0, err
    local_only = Home(shared_home.root)  # the same home, without the store: a run recorded locally only
    code, _, err = tune(local_only, "progress", "--reports", "1", "--interval", "0")
    assert code == 0, err
    shown = aoe_runner(shared_home, "store", "status").stdout.splitlines()
    assert shown[1:] == [
        "reachable  yes",
        "runs       2 runs from 1 host",
        "this host  3 runs recorded here, 1 not in the store; 'aoe-runner runs push' sends them",
    ]
    assert "pushed 1 run" in aoe_runner(shared_home, "runs", "push").stderr
    assert json.loads(aoe_runner(shared_home, "store", "status", "--json").stdout)["not_pushed"] == 0


def test_reading_commands_fall_back_to_this_hosts_history_when_the_store_is_down(tmp_path: Path) -> None:
    home = Home(tmp_path)
    run_id = _tune(home)  # recorded in the local history
    down = {"AOE_RUNNER_STORE": NOBODY}
    listed = aoe_runner(home, "runs", "list", "--json", env=down)
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == [run_id]
    (warning,) = listed.stderr.splitlines()
    assert warning.startswith("warning: run store postgresql://aoe@127.0.0.1:9/aoe: ")
    assert warning.endswith(f"reading this host's history instead ({tmp_path / 'home'}), without other hosts' runs")
    for argv in (["runs", "show"], ["report", "--run", "latest", "--json"], ["bank", "best", "--json"]):
        done = aoe_runner(home, *argv, env=down)
        assert done.returncode == 0 and done.stderr.count("warning: ") == 1, (argv, done.stderr)
    named = aoe_runner(home, "--store", NOBODY, "runs", "list")  # a store named on the command line is not replaced
    assert named.returncode == 4 and named.stderr.startswith("error: run store postgresql://aoe@127.0.0.1:9/aoe: ")
    status = aoe_runner(home, "store", "status", env=down)
    assert status.returncode == 4
    assert status.stdout.splitlines()[1].startswith("reachable  no: ")
    assert status.stdout.splitlines()[2] == "this host  1 run recorded here; reading commands read them meanwhile"


def test_store_use_switches_between_a_shared_store_and_the_local_history(tmp_path: Path, pg_url: str) -> None:
    home = Home(tmp_path)
    used = aoe_runner(home, "store", "use", pg_url)
    assert used.returncode == 0, used.stderr
    config = tmp_path / "home" / "store.conf"
    assert f"url = {pg_url}" in config.read_text().splitlines()
    status = json.loads(aoe_runner(home, "store", "status", "--json").stdout)
    assert (status["source"], status["reachable"]) == (str(config), True)
    _tune(home)
    assert json.loads(aoe_runner(home, "store", "status", "--json").stdout)["runs"] == 1
    back = aoe_runner(home, "store", "use", "local")
    assert back.returncode == 0 and "this home now uses the run store local" in back.stderr
    assert aoe_runner(home, "store", "status").stdout.startswith(f"store      local (chosen by {config})\n")
    overridden = aoe_runner(home, "store", "use", "local", env={"AOE_RUNNER_STORE": pg_url})
    assert "warning: AOE_RUNNER_STORE chooses" in overridden.stderr
    refused = aoe_runner(home, "store", "use", NOBODY)
    assert refused.returncode == 4 and "url = local" in config.read_text()  # a store that cannot be reached is not chosen
    empty = aoe_runner(home, "store", "use", " ")
    assert (empty.returncode, empty.stderr.split(" (see")[0]) == (
        2,
        "error: STORE: an empty value names nothing (give 'local' or a postgresql:// URL)",
    )
    word = aoe_runner(home, "--store", "foo", "runs", "list")
    assert word.returncode == 2 and "--store: 'foo' is not a postgresql:// URL" in word.stderr
    bad = aoe_runner(home, "store", "use", "mysql://x@y/z")
    assert bad.returncode == 2 and "url = local" in config.read_text()
