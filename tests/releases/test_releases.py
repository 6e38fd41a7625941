"""Bank releases with real files and processes: publish, pull, rollback, and every refusal, in a home of the test's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.releases.conftest import Releases, tree
from tests.tune.runner import aoe_runner


def test_a_pulled_version_is_the_tuned_bank_byte_for_byte_and_rollback_puts_the_one_before_back(releases: Releases) -> None:
    first = releases.tune_files("Ascend910B3/cube/a.bin=one", "Ascend910B3/cube/b.bin=two", "subgraph.json={}")
    after_first = tree(releases.root / "bank")
    assert releases.run("bank", "publish", first, "--name", "resnet", "--unverified").returncode == 0
    second = releases.tune_files("Ascend910B3/cube/a.bin=ONE", "Ascend910B3/unified_bank/c.json=three", "subgraph.json=-")
    after_second = tree(releases.root / "bank")
    assert releases.run("bank", "publish", second, "--name", "resnet", "--unverified", "--note", "more ops").returncode == 0
    target = releases.root / "train" / "bank"
    target.parent.mkdir()

    pulled = releases.run("bank", "pull", "resnet@1", "--to", str(target), "--env-file", str(releases.root / "env.sh"))
    assert pulled.returncode == 0, pulled.stderr
    assert tree(target) == after_first
    assert pulled.stdout == f"export TUNE_BANK_PATH={target}\nexport ACL_OP_COMPILER_CACHE_MODE=force\n"
    assert (releases.root / "env.sh").read_text() == pulled.stdout
    assert releases.run("bank", "pull", "resnet", "--to", str(target)).returncode == 0
    assert tree(target) == after_second
    again = releases.run("bank", "pull", "resnet@2", "--to", str(target))
    assert "resnet@2 is in place already" in again.stderr

    rolled = releases.run("bank", "rollback", str(target))
    assert rolled.returncode == 0, rolled.stderr
    assert tree(target) == after_first
    assert "resnet@2 again" in releases.run("bank", "rollback", str(target)).stderr  # a second rollback goes forward
    versions = releases.versions()
    assert [(v["name"], v["number"], v["unverified"], v["note"]) for v in versions] == [
        ("resnet", 1, True, None),
        ("resnet", 2, True, "more ops"),
    ]
    diff = json.loads(releases.run("bank", "diff", "resnet@1", "resnet@2", "--json").stdout)
    assert (diff["added"], diff["removed"], diff["changed"]) == (
        ["Ascend910B3/unified_bank/c.json"],
        ["subgraph.json"],
        ["Ascend910B3/cube/a.bin"],
    )
    table = releases.run("bank", "versions").stdout
    assert "UNVERIFIED" in table and "resnet@2" in table
    narrow = aoe_runner(releases, "bank", "versions", env={"COLUMNS": "80"}).stdout
    assert max(map(len, narrow.splitlines())) <= 80 and first in narrow and second in narrow  # ids whole


def test_publishing_without_a_passing_verify_is_refused_and_names_what_to_do(releases: Releases) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=one")
    refused = releases.run("bank", "publish", run, "--name", "resnet")
    assert refused.returncode == 1
    assert refused.stderr == (
        f"error: run {run}: no passing verification of its bank (a verify whose tuned arm ran with exactly this bank and "
        f"found it faster, every gate passed): run 'aoe-runner verify SCRIPT --run {run}', or publish with --unverified\n"
    )
    assert releases.versions() == []


def test_two_runs_holding_one_file_with_different_contents_need_prefer(releases: Releases) -> None:
    one = releases.tune_files("Ascend910B3/cube/a.bin=one", "Ascend910B3/cube/b.bin=b", bank="bank-a")
    two = releases.tune_files("Ascend910B3/cube/a.bin=two", "Ascend910B3/cube/c.bin=c", bank="bank-b")
    refused = releases.run("bank", "publish", "--from", one, "--from", two, "--name", "merged", "--unverified")
    assert refused.returncode == 1
    assert f"1 file with different contents in the runs: Ascend910B3/cube/a.bin ({one} and {two}); --prefer RUN" in refused.stderr
    done = releases.run("bank", "publish", "--from", one, "--from", two, "--name", "merged", "--unverified", "--prefer", two)
    assert done.returncode == 0, done.stderr
    target = releases.root / "pulled"
    assert releases.run("bank", "pull", "merged", "--to", str(target)).returncode == 0
    expected = {"Ascend910B3/cube/a.bin": b"two", "Ascend910B3/cube/b.bin": b"b", "Ascend910B3/cube/c.bin": b"c"}
    assert tree(target) == expected


def test_runtime_kb_files_are_left_out_and_a_bank_of_two_socs_is_refused_unless_one_is_chosen(releases: Releases) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=a", "Ascend310P3/cube/p.bin=p", "Ascend910B3/runtime_kb_1.json=r")
    refused = releases.run("bank", "publish", run, "--name", "mixed", "--unverified")
    assert refused.returncode == 1
    assert "operator files of 2 SoCs (Ascend310P3, Ascend910B3), which AOE never merges: --soc SOC" in refused.stderr
    done = releases.run("bank", "publish", run, "--name", "mixed", "--unverified", "--soc", "Ascend910B3")
    assert done.returncode == 0, done.stderr
    assert "left out Ascend910B3/runtime_kb_1.json: a runtime_kb file, which AOE never merges" in done.stderr
    assert "left out Ascend310P3/cube/p.bin: for Ascend310P3, not Ascend910B3" in done.stderr
    (version,) = releases.versions()
    assert (version["soc"], version["files"]) == ("Ascend910B3", 1)


def test_a_version_of_another_soc_or_cann_is_refused_unless_drift_is_allowed(releases: Releases) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=a")
    assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0
    record = releases.root / "home" / "releases" / "resnet" / "1.json"
    data = json.loads(record.read_text())
    data["fingerprint"]["cann_version"] = "7.0.RC1"  # as if published on a host with another CANN
    record.write_text(json.dumps(data))
    target = releases.root / "pulled"
    refused = releases.run("bank", "pull", "resnet@1", "--to", str(target))
    assert refused.returncode == 5
    assert "resnet@1 was tuned elsewhere: CANN version 7.0.RC1 != " in refused.stderr and "--allow-env-drift" in refused.stderr
    assert not os.path.lexists(target)
    allowed = releases.run("bank", "pull", "resnet@1", "--to", str(target), "--allow-env-drift")
    assert allowed.returncode == 0 and "pulled despite: CANN version 7.0.RC1" in allowed.stderr


def test_a_damaged_blob_stops_the_pull_before_anything_changes(releases: Releases) -> None:
    first = releases.tune_files("Ascend910B3/cube/a.bin=one")
    assert releases.run("bank", "publish", first, "--name", "resnet", "--unverified").returncode == 0
    target = releases.root / "pulled"
    assert releases.run("bank", "pull", "resnet", "--to", str(target)).returncode == 0
    second = releases.tune_files("Ascend910B3/cube/a.bin=two")
    assert releases.run("bank", "publish", second, "--name", "resnet", "--unverified").returncode == 0
    import hashlib

    blob = releases.root / "home" / "blobs" / hashlib.sha256(b"two").hexdigest()[:2] / hashlib.sha256(b"two").hexdigest()
    blob.chmod(0o644)
    blob.write_bytes(b"tw0")
    damaged = releases.run("bank", "pull", "resnet@2", "--to", str(target))
    assert damaged.returncode == 4
    assert (
        damaged.stderr
        == f"error: {blob}: damaged: the content of Ascend910B3/cube/a.bin does not match its sha256; nothing was changed\n"
    )
    assert tree(target) == {"Ascend910B3/cube/a.bin": b"one"}
    blob.unlink()
    missing = releases.run("bank", "pull", "resnet@2", "--to", str(target))
    assert missing.returncode == 4 and f"error: {blob}: cannot read the content of Ascend910B3/cube/a.bin" in missing.stderr
    assert not [p for p in (releases.root / ".pulled.versions").iterdir() if p.name.startswith(".incoming")]


@pytest.mark.slow  # several real tunes; the fast set keeps the round trip and the refusals
def test_runs_rm_and_prune_keep_what_a_version_needs_and_name_it(releases: Releases) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=one")
    assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0
    releases.tune_files("Ascend910B3/cube/a.bin=two")  # the bank moves on: "one" is only in the version now
    removed = releases.run("runs", "rm", run)
    assert removed.returncode == 0, removed.stderr
    assert f"run {run} is kept: resnet@1 was published from it" in removed.stderr
    assert releases.run("runs", "prune", "--keep", "0", "--yes").returncode == 0
    assert run in releases.run("runs", "list").stdout
    target = releases.root / "pulled"
    assert releases.run("bank", "pull", "resnet@1", "--to", str(target)).returncode == 0
    assert (target / "Ascend910B3" / "cube" / "a.bin").read_text() == "one"


def test_a_bank_directory_at_the_path_is_moved_aside_once_and_a_foreign_link_is_refused(releases: Releases) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=one")
    assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0
    target = releases.root / "own"
    (target / "mine").mkdir(parents=True)
    (target / "mine" / "file").write_text("kept")
    pulled = releases.run("bank", "pull", "resnet", "--to", str(target))
    assert pulled.returncode == 0, pulled.stderr
    (aside,) = (releases.root / ".own.versions").glob("own.before-pull.*")
    assert (
        aside / "mine" / "file"
    ).read_text() == "kept" and f"{target} was a directory; it was moved to {aside}" in pulled.stderr
    foreign = releases.root / "foreign"
    foreign.symlink_to(releases.root / "bank")
    refused = releases.run("bank", "pull", "resnet", "--to", str(foreign))
    assert refused.returncode == 1 and "not a bank aoe-runner pulled: refusing to replace it" in refused.stderr
    assert foreign.readlink() == releases.root / "bank"


def test_bad_names_and_versions_are_usage_errors(releases: Releases) -> None:
    assert releases.run("bank", "publish", "latest", "--name", "../x", "--unverified").returncode == 2
    unnamed = releases.run("bank", "publish", "latest", "--unverified")  # --name not given: not "an empty value"
    assert unnamed.returncode == 2 and "'' is not a bank name" in unnamed.stderr, unnamed.stderr
    assert releases.run("bank", "show", "resnet@0").returncode == 2
    for version in ("resnet@²", "resnet@１", "resnet@1_0"):  # '²' passed isdigit() and crashed int() (exit 3)
        refused = releases.run("bank", "show", version)
        assert refused.returncode == 2 and "a whole number from 1" in refused.stderr, refused.stderr
    missing = releases.run("bank", "show", "resnet@3")
    assert missing.returncode == 4 and "no version of this bank is published" in missing.stderr
    misspelt = releases.run("bank", "versions", "resnt")  # it listed nothing and exited 0
    assert misspelt.returncode == 4 and "resnt: no version of this bank is published (published: " in misspelt.stderr
    assert releases.run("bank", "rollback", str(releases.root / "nothing")).returncode == 1


@pytest.mark.slow  # several real tunes; the fast set keeps the round trip and the refusals
def test_a_pulled_bank_path_tuned_through_is_locked_against_a_swap(releases: Releases) -> None:
    """The bank lock knows the version directory the link leads to: a swap waits for nobody, it refuses."""
    run = releases.tune_files("Ascend910B3/cube/a.bin=one")
    assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0
    target = releases.root / "pulled"
    assert releases.run("bank", "pull", "resnet", "--to", str(target)).returncode == 0
    assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0
    from aoe_runner.common.devlock import BankLock, LockHolder

    os.environ["AOE_RUNNER_LOCK_DIR"] = str(releases.root / "locks")
    try:
        with BankLock(target).acquire(LockHolder.here("aoe-runner tune train.py"), shared=True):
            busy = releases.run("bank", "pull", "resnet@2", "--to", str(target))
    finally:
        del os.environ["AOE_RUNNER_LOCK_DIR"]
    assert busy.returncode == 1 and "is in use by another aoe-runner" in busy.stderr
    assert Path(os.readlink(target)).name.startswith("resnet@1.")
    assert not list((releases.root / ".pulled.versions").glob("resnet@2.*"))  # the refused pull left nothing behind


@pytest.mark.slow  # several real tunes; the fast set keeps the round trip and the refusals
def test_a_bank_directory_whose_name_looks_like_a_version_is_moved_aside_and_kept(releases: Releases) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=one")
    assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0
    own = releases.root / "bank@1"
    own.mkdir()
    (own / "mine.txt").write_text("precious")
    assert releases.run("bank", "pull", "resnet", "--to", str(own)).returncode == 0
    (aside,) = (releases.root / ".bank@1.versions").glob("bank@1.before-pull.*")
    assert (aside / "mine.txt").read_text() == "precious"


@pytest.mark.slow  # several real tunes; the fast set keeps the round trip and the refusals
def test_rollback_keeps_the_version_it_swapped_away_from_and_a_second_one_goes_forward(releases: Releases) -> None:
    for text in ("one", "two"):
        run = releases.tune_files(f"Ascend910B3/cube/a.bin={text}")
        assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0
    target = releases.root / "pulled"
    for version in ("resnet@1", "resnet@2"):
        assert releases.run("bank", "pull", version, "--to", str(target)).returncode == 0
    swapped_away = target.resolve()
    assert releases.run("bank", "rollback", str(target)).returncode == 0
    assert swapped_away.is_dir() and (target / "Ascend910B3" / "cube" / "a.bin").read_text() == "one"
    assert releases.run("bank", "rollback", str(target)).returncode == 0
    assert (target / "Ascend910B3" / "cube" / "a.bin").read_text() == "two"


def test_a_hand_made_version_linking_out_of_the_bank_is_refused(releases: Releases) -> None:
    import gzip
    import hashlib

    body = json.dumps({"directories": [], "files": [{"path": "a", "size": 11, "link": "/etc/shadow",
                       "sha256": hashlib.sha256(b"/etc/shadow").hexdigest()}]}, separators=(",", ":"), sort_keys=True).encode()  # fmt: skip
    identity = hashlib.sha256(body).hexdigest()
    stored = releases.root / "home" / "inventories" / identity[:2] / f"{identity}.json.gz"
    stored.parent.mkdir(parents=True)
    stored.write_bytes(gzip.compress(body))
    run = releases.tune_files("x=1")
    assert releases.run("bank", "publish", run, "--name", "out", "--unverified").returncode == 0
    record = releases.root / "home" / "releases" / "out" / "1.json"
    record.write_text(record.read_text().replace(json.loads(record.read_text())["inventory"], identity))
    refused = releases.run("bank", "pull", "out", "--to", str(releases.root / "pulled"))
    assert refused.returncode == 4 and "'a' links to '/etc/shadow', outside the bank" in refused.stderr


@pytest.mark.slow  # several real tunes; the fast set keeps the round trip and the refusals
def test_merge_with_aoe_runs_the_toolkits_merge_tool_on_staged_banks_and_publishes_its_output(releases: Releases) -> None:
    one = releases.tune_files("Ascend910B3/cube/a.bin=one", "Ascend910B3/runtime_kb_x.json=r", bank="bank-a")
    two = releases.tune_files("Ascend910B3/cube/a.bin=two", "Ascend910B3/cube/c.bin=c", bank="bank-b")
    publish = ("bank", "publish", "--from", one, "--from", two, "--name", "merged", "--unverified", "--merge-with-aoe")
    missing = releases.run(*publish)
    assert missing.returncode == 4 and "AOE's bank merge tool was not found" in missing.stderr
    toolkit = {"ASCEND_TOOLKIT_HOME": str(Path(__file__).parent.parent / "fakes" / "cann"), "HOME": str(releases.root / "user")}
    done = aoe_runner(releases, *publish, env=toolkit)
    assert done.returncode == 0, done.stderr  # the fake fails on a runtime_kb file: it was left out of the stage
    (version,) = releases.versions()
    assert version["merged_by"].startswith(
        f"{toolkit['ASCEND_TOOLKIT_HOME']}/python/site-packages/schedule_search/msoptune.py --merge"
    )
    target = releases.root / "pulled"
    assert releases.run("bank", "pull", "merged", "--to", str(target)).returncode == 0
    assert tree(target) == {"Ascend910B3/cube/a.bin": b"two", "Ascend910B3/cube/c.bin": b"c"}
    assert not (releases.root / "home" / "staging").exists() or not any((releases.root / "home" / "staging").iterdir())


def test_verify_published_refuses_a_bank_path_that_does_not_hold_the_version(releases: Releases) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=one")
    assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0
    target = releases.root / "pulled"
    assert releases.run("bank", "pull", "resnet", "--to", str(target)).returncode == 0
    (target / "Ascend910B3" / "cube" / "a.bin").write_text("edited")
    refused = releases.run("verify", "train.py", "--bank", str(target), "--published", "resnet")
    assert refused.returncode == 1
    assert refused.stderr == (
        f"error: {target} does not hold resnet@1 (1 file not as published, first Ascend910B3/cube/a.bin): "
        f"aoe-runner bank pull resnet@1 --to {target}\n"
    )
    assert releases.run("verify", "train.py", "--published", "resnet").returncode == 2
    assert [m for m in releases.manifests() if m["kind"] == "verify"] == []


def test_what_a_dry_run_says_a_removal_frees_is_what_it_frees(releases: Releases) -> None:
    """The estimate counts what a collect keeps: each kept tuning run's bank before and after it, and every version."""
    from aoe_runner.common.files import tree_bytes
    from aoe_runner.runs.history import RunStore
    from aoe_runner.runs.prune import remove_or_plan

    runs = [releases.tune_files(f"Ascend910B3/cube/a.bin={'x' * size}") for size in (1000, 3000, 5000, 7000)]
    assert releases.run("bank", "publish", runs[0], "--name", "resnet", "--unverified").returncode == 0
    os.environ.update({"AOE_RUNNER_HOME": str(releases.root / "home"), "AOE_RUNNER_LOCK_DIR": str(releases.root / "locks")})
    try:
        store = RunStore(releases.root / "home")
        going = [row for row in store.list() if row.id in runs[1:3]]
        planned = remove_or_plan(store, lambda: going, really=False)
        before = tree_bytes(store.blobs.blobs)
        removed = remove_or_plan(store, lambda: going, really=True)
    finally:
        for name in ("AOE_RUNNER_HOME", "AOE_RUNNER_LOCK_DIR"):
            del os.environ[name]
    assert planned.blob_bytes == removed.blob_bytes == before - tree_bytes(store.blobs.blobs) == 3000
