"""`bank best`: per operator, the run whose tuned time was lowest, with its host; a report, filtered by SoC and script."""

from __future__ import annotations

import json
from pathlib import Path

from aoe_runner.runs.manifest import RunManifest
from aoe_runner.runs.outcomes import OperatorResult
from aoe_runner.store.pg_index import PgIndex
from tests.store.conftest import SharedHome, as_host
from tests.tune.runner import aoe_runner

MATMUL = "layer_0/MatMul_0 [MatMulV2] (Schedule)"
CONV = "layer_0/Conv2D_0 [Conv2D] (Schedule)"


def test_the_fastest_result_of_each_operator_wins_with_its_run_and_host(shared_home: SharedHome, template: RunManifest) -> None:
    index = PgIndex(shared_home.url, "store")
    results = {
        ("host-a", "Ascend910B3"): [
            OperatorResult("operator", MATMUL, 12.0, 20.0, 20 / 12),
            OperatorResult("operator", CONV, 30.0, 40.0, 4 / 3),
        ],
        ("host-b", "Ascend910B3"): [
            OperatorResult("operator", MATMUL, 10.0, 20.0, 2.0),
            OperatorResult("operator", CONV, 35.0, 40.0, 40 / 35),
        ],
        ("host-c", "Ascend910B4"): [OperatorResult("operator", MATMUL, 5.0, 20.0, 4.0)],  # another SoC: not comparable
        ("host-d", None): [OperatorResult("subgraph", "graph_1", 900.0, 1000.0, 1000 / 900)],
    }
    for number, ((host, soc), found) in enumerate(results.items()):
        index.record(as_host(template, f"20260103-00000{number}-0000000{number}", host, soc, minutes=number), "", found)
    done = aoe_runner(shared_home, "bank", "best", "--soc", "Ascend910B3", "--script", "train.py", "--json")
    assert done.returncode == 0, done.stderr
    best = {row["name"]: (row["run"][-1], row["host"], row["tuned_us"]) for row in map(json.loads, done.stdout.splitlines())}
    assert best == {MATMUL: ("1", "host-b", 10.0), CONV: ("0", "host-a", 30.0)}
    table = aoe_runner(shared_home, "bank", "best", "--soc", "Ascend910B4")
    assert table.stdout.splitlines()[2].split()[:3] == ["operator", "layer_0/MatMul_0", "[MatMulV2]"]
    none = aoe_runner(shared_home, "bank", "best", "--soc", "Ascend310P3")
    assert none.stdout == "no recorded tuning run (of the --soc and --script given) has operator results\n"


def test_store_init_with_artifacts_puts_the_run_records_in_the_shared_directory(tmp_path: Path, pg_url: str) -> None:
    from tests.tune.runner import Home, tune

    home = Home(tmp_path)
    shared = tmp_path / "nfs"
    assert aoe_runner(home, "store", "init", pg_url, "--artifacts", str(shared)).returncode == 0
    assert f"artifacts = {shared}" in (tmp_path / "home" / "store.conf").read_text()
    code, _, err = tune(home, "exit", "0")
    assert code == 0, err
    (record,) = (shared / "runs").iterdir()
    assert (record / "manifest.json").is_file() and (record / "log.txt").is_file()
