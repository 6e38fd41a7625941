"""Campaigns on a real Ray cluster: two worker nodes on this machine (Ray's own cluster_utils), each declaring NPUs
(there are none here) and CPUs so that preflight's formulas decide the packing; the simulator's scripts as jobs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.tune.runner import SIMULATOR, wait_for_output

pytestmark = pytest.mark.slow  # a Ray cluster starts in seconds and each campaign takes several
ray_cluster_utils = pytest.importorskip("ray.cluster_utils")

NODE_CPUS = 100  # an op job asks 8 + 8 + min(100/2, 8) + 50 = 74: one at a time per node


class Place:
    """The cluster, and the aoe-runner home its workers and the campaigns share."""

    def __init__(self, root: Path, cluster: object, nodes: list[object]) -> None:
        self.root, self.cluster, self.nodes = root, cluster, nodes
        self.env = {
            **os.environ,
            "AOE_RUNNER_HOME": str(root / "home"),
            "AOE_RUNNER_LOCK_DIR": str(root / "locks"),
            "PYTHONPATH": str(ROOT),
        }

    @property
    def address(self) -> str:
        return str(self.cluster.address)  # type: ignore[attr-defined]

    def campaign_file(self, name: str, jobs: str) -> Path:
        path = self.root / f"{name}.toml"
        path.write_text(f'name = "{name}"\n[defaults]\nmode = "op"\nscript = "{SIMULATOR}"\n{jobs}', encoding="utf-8")
        return path

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "aoe_runner", "campaign", *argv]
        return subprocess.run(command, env=self.env, cwd=self.root, capture_output=True, text=True, timeout=300)

    def record(self, campaign_id: str | None = None) -> dict:
        done = self.run("status", *([campaign_id] if campaign_id else []), "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Place]:
    root = tmp_path_factory.mktemp("campaign")
    saved = dict(os.environ)
    os.environ.update({"AOE_RUNNER_HOME": str(root / "home"), "AOE_RUNNER_LOCK_DIR": str(root / "locks")})
    cluster = ray_cluster_utils.Cluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False}
    )  # the head runs no job: it has no NPU
    try:
        nodes = [  # their own lock directories: two hosts' device 0 are two devices, not one
            cluster.add_node(num_cpus=NODE_CPUS, resources={"NPU": 2}, env_vars={"AOE_RUNNER_LOCK_DIR": str(root / f"locks-{n}")})
            for n in range(2)
        ]
        cluster.wait_for_nodes()
        yield Place(root, cluster, nodes)
    finally:
        cluster.shutdown()
        os.environ.clear()
        os.environ.update(saved)


def _job(name: str, *args: str, after: tuple[str, ...] = ()) -> str:
    quoted = ", ".join(f'"{arg}"' for arg in args)
    waits = ", ".join(f'"{other}"' for other in after)
    return f'[[job]]\nname = "{name}"\nargs = [{quoted}]\nafter = [{waits}]\n'


def _moment(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_jobs_are_packed_by_the_formula_then_a_second_run_does_no_work(place: Place) -> None:
    jobs = "".join(_job(f"j{n}", "sleep", "2") for n in range(3))
    path = place.campaign_file("packing", jobs)
    plan = place.run("check", str(path), "--address", place.address, "--json")
    assert plan.returncode == 0, plan.stderr
    assert {job["cpus"] for job in json.loads(plan.stdout)["jobs"]} == {74}
    done = place.run("run", str(path), "--address", place.address, "--force")
    assert done.returncode == 0, done.stderr
    record = place.record()
    attempts = [job["attempts"][-1] for job in record["jobs"]]
    assert all(job["state"] == "succeeded" and job["attempts"][-1]["run"] for job in record["jobs"])
    by_node: dict[str, list[tuple[float, float]]] = {}
    for attempt in attempts:
        by_node.setdefault(attempt["node"], []).append((_moment(attempt["started_at"]), _moment(attempt["ended_at"])))
    assert len(by_node) == 2  # both nodes were used
    for spans in by_node.values():  # 74 + 74 CPUs never fit in one node's 100 at once
        spans.sort()
        assert all(later[0] >= earlier[1] - 0.5 for earlier, later in zip(spans, spans[1:], strict=False)), spans
    runs = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "runs", "list", "--json"], env=place.env, capture_output=True, text=True
    )
    listed = {json.loads(line)["id"] for line in runs.stdout.splitlines()}  # one run per line
    assert {attempt["run"] for attempt in attempts} <= listed
    again = place.run("run", str(path), "--address", place.address, "--force")
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("(succeeded in campaign") == 3 and "submitted" not in again.stderr
    assert "on no node: every job is done" in again.stderr  # Ray was not even started


def test_a_failed_job_skips_what_waits_for_it(place: Place) -> None:
    (place.root / "not-a-bank").write_text("a file\n", encoding="utf-8")
    jobs = _job("bad", "exit", "3") + _job("after-bad", "sleep", "0", after=("bad",))
    jobs += _job("refused", "sleep", "0") + f'bank = "{place.root / "not-a-bank"}"\n'
    done = place.run("run", str(place.campaign_file("failing", jobs)), "--address", place.address, "--force")
    assert done.returncode == 1, done.stderr
    states = {job["name"]: (job["state"], job["why"]) for job in place.record()["jobs"]}
    assert states["bad"] == ("failed", "its tune exited 3")  # its run tells the rest
    assert states["after-bad"] == ("skipped", "waits for bad, which did not succeed")
    assert states["refused"][1].startswith("its tune exited 4: error: ") and "the bank is not a directory" in states["refused"][1]


def test_a_job_that_fits_on_no_node_is_refused_before_anything_starts(place: Place) -> None:
    path = place.campaign_file("too-big", _job("huge", "sleep", "0") + 'model_memory = "100TiB"\n')
    done = place.run("run", str(path), "--address", place.address, "--force")
    assert done.returncode == 1
    assert "nothing was started: job huge: fits on no node: needs" in done.stderr and "GiB (model memory" in done.stderr


def test_ctrl_c_stops_every_job_and_each_run_is_recorded_interrupted(place: Place) -> None:
    path = place.campaign_file("stopping", _job("h1", "hang") + _job("h2", "hang") + _job("later", "sleep", "0", after=("h1",)))
    command = [sys.executable, "-m", "aoe_runner", "campaign", "run", str(path), "--address", place.address, "--force"]
    process = subprocess.Popen(command, env=place.env, cwd=place.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = wait_for_output(process, "running on", timeout_s=120, stream="stderr")
    if seen.count("running on") < 2:
        wait_for_output(process, "running on", timeout_s=120, stream="stderr")
    time.sleep(2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    record = place.record()
    states = {job["name"]: job["state"] for job in record["jobs"]}
    assert states == {"h1": "stopped", "h2": "stopped", "later": "stopped"}, out
    assert record["stopped_by"] == "SIGINT"
    for job in record["jobs"][:2]:
        manifest = json.loads((place.root / "home" / "runs" / job["attempts"][-1]["run"] / "manifest.json").read_text())
        assert manifest["status"] == "interrupted" and manifest["campaign"]["job"] == job["name"]
    leftover = subprocess.run(["pgrep", "-f", f"{SIMULATOR} hang"], capture_output=True, text=True).stdout.split()
    assert leftover == []


def test_fail_fast_stops_the_running_jobs_and_records_the_end(place: Place) -> None:
    jobs = _job("f", "exit", "1") + _job("y", "sleep", "30") + _job("z", "sleep", "30")  # f and y start: one job a node
    path = place.campaign_file("fail-fast", jobs)
    done = place.run("run", str(path), "--address", place.address, "--force", "--fail-fast")
    assert done.returncode == 1, done.stderr
    record = place.record()
    assert record["ended_at"] is not None
    states = {job["name"]: job["state"] for job in record["jobs"]}
    assert (states["f"], states["y"], states["z"]) == ("failed", "stopped", "stopped")


def test_a_job_whose_node_dies_is_run_again_on_another(place: Place) -> None:
    path = place.campaign_file("node-death", _job("survivor", "sleep", "6"))
    command = [
        sys.executable,
        "-m",
        "aoe_runner",
        "campaign",
        "run",
        str(path),
        "--address",
        place.address,
        "--force",
        "--retries",
        "1",
    ]
    process = subprocess.Popen(command, env=place.env, cwd=place.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_output(process, "running on", timeout_s=120, stream="stderr")
    node_id = place.record()["jobs"][0]["attempts"][0]["node"]
    (victim,) = [node for node in place.nodes if node.node_id == node_id]  # type: ignore[attr-defined]
    place.cluster.remove_node(victim, allow_graceful=False)  # type: ignore[attr-defined]
    place.nodes.remove(victim)
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    (job,) = place.record()["jobs"]
    assert job["state"] == "succeeded" and len(job["attempts"]) == 2
    assert job["attempts"][0]["node"] != job["attempts"][1]["node"]
