"""Bank releases under load and faults: a verified publish, a reader polling through a swap, kill -9 mid-pull."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.releases.conftest import Releases, tree
from tests.tune.runner import SIMULATOR, aoe_runner

pytestmark = pytest.mark.slow  # several real runs each, or thousands of files

READER = """
import os, sys, time
path, stop = sys.argv[1], sys.argv[2]
seen, mixed = set(), 0
while not os.path.exists(stop):
    try:
        root = os.path.realpath(path)  # a job resolves its bank once, then reads it
        contents = set()
        for directory, _, names in os.walk(root):
            for name in names:
                with open(os.path.join(directory, name), "rb") as handle:
                    contents.add(handle.read())
    except FileNotFoundError:
        continue  # a version directory removed after the swap, while it was read: read again
    if len(contents) > 1:
        mixed += 1
    seen |= contents
print(mixed, sorted(s.decode() for s in seen))
"""


def test_a_version_is_published_once_a_verify_proved_that_very_bank(releases: Releases) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=tuned")
    steps = ("--", "steps", "40", "--bank-factor", "0.8")  # the simulator's steps: 20% faster with a bank that has files
    verified = aoe_runner(releases, "verify", str(SIMULATOR), "--bank", "bank", "--repeats", "2", *steps)
    assert verified.returncode == 0 and "verdict: faster" in verified.stdout, verified.stderr
    done = releases.run("bank", "publish", run, "--name", "resnet")
    assert done.returncode == 0, done.stderr
    (version,) = releases.versions()
    (proof,) = version["proofs"]
    assert version["unverified"] is False and proof["run"] == run and proof["speedup"] > 1.1
    assert proof["ci_low"] <= proof["speedup"] <= proof["ci_high"]
    target = releases.root / "consumer"
    assert releases.run("bank", "pull", "resnet", "--to", str(target)).returncode == 0
    consumer = aoe_runner(releases, "verify", str(SIMULATOR), "--bank", str(target), "--published", "resnet@1",
                          "--repeats", "2", "--format", "json", *steps)  # fmt: skip
    assert consumer.returncode == 0, consumer.stderr
    report = json.loads(consumer.stdout)
    assert report["published"] == "resnet@1" and report["comparison"]["verdict"] == "faster"
    releases.tune_files("late.bin=changed")  # a new run: its bank is not the one verified
    refused = releases.run("bank", "publish", "latest", "--name", "resnet")
    assert refused.returncode == 1 and "no passing verification of its bank" in refused.stderr


def test_a_reader_polling_through_the_swaps_sees_one_version_at_a_time(releases: Releases) -> None:
    target = _first_of_two_versions(releases, "flip", 400)
    stop = releases.root / "stop"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(target), str(stop)], stdout=subprocess.PIPE, text=True)
    for number in [2, 1, 2, 1, 2]:
        assert releases.run("bank", "pull", f"flip@{number}", "--to", str(target)).returncode == 0
    stop.touch()
    out, _ = reader.communicate(timeout=60)
    mixed, seen = out.split(" ", 1)
    assert mixed == "0" and json.loads(seen.replace("'", '"')) == ["A", "B"]


def test_a_pull_killed_at_any_point_leaves_the_path_as_it_was(releases: Releases) -> None:
    target = _first_of_two_versions(releases, "big", 3000)
    before = tree(target)
    place = releases.root / ".pulled.versions"
    command = [sys.executable, "-m", "aoe_runner", "bank", "pull", "big@2", "--to", str(target)]
    pulling = subprocess.Popen(command, env={**releases.env, "HOME": str(releases.root / "user")}, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not [entry for entry in os.listdir(place) if entry.startswith(".incoming")] and time.monotonic() < deadline:
        time.sleep(0.005)
    pulling.send_signal(signal.SIGKILL)  # while it writes the new version
    pulling.wait(timeout=30)
    assert tree(target) == before
    done = releases.run("bank", "pull", "big@2", "--to", str(target))
    assert done.returncode == 0, done.stderr
    assert tree(target) == {path: b"B" for path in before}
    assert not [entry for entry in os.listdir(place) if entry.startswith(".incoming")]
    assert sorted(Path(entry).name.split(".")[0] for entry in os.listdir(place) if "@" in entry) == ["big@1", "big@2"]


def _first_of_two_versions(releases: Releases, name: str, files: int) -> Path:
    """NAME@1 (every file "A") pulled to a path, and NAME@2 (every file "B") published; the path."""
    paths = [f"Ascend910B3/cube/op_{n}.bin" for n in range(files)]
    for letter in "AB":
        run = releases.tune_files(*(f"{path}={letter}" for path in paths))
        assert releases.run("bank", "publish", run, "--name", name, "--unverified").returncode == 0
    target = releases.root / "pulled"
    assert releases.run("bank", "pull", f"{name}@1", "--to", str(target)).returncode == 0
    return target


def test_pulls_of_one_path_at_once_take_turns_and_leave_one_version_whole(releases: Releases) -> None:
    target = _first_of_two_versions(releases, "turns", 200)
    command = [sys.executable, "-m", "aoe_runner", "bank", "pull"]
    env = {**releases.env, "HOME": str(releases.root / "user")}
    pulls = [
        subprocess.Popen([*command, f"turns@{1 + n % 2}", "--to", str(target)], env=env, stderr=subprocess.PIPE, text=True)
        for n in range(6)
    ]
    assert [pull.wait(timeout=120) for pull in pulls] == [0] * 6, [pull.stderr.read() for pull in pulls if pull.stderr]
    assert set(tree(target).values()) in ({b"A"}, {b"B"}) and len(tree(target)) == 200
    place = releases.root / ".pulled.versions"
    kept = sorted(entry for entry in os.listdir(place) if "@" in entry)
    assert len(kept) == 2 and not [entry for entry in os.listdir(place) if entry.startswith(".incoming")]
    history = json.loads((place / "history.json").read_text())
    assert set(history) <= set(kept) and os.readlink(target).rpartition("/")[2] == history[-1]
