"""What a hostile version, merge tool or command line cannot do to a bank release (found by adversarial passes)."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from aoe_runner.errors import InputError
from aoe_runner.releases.pull import check_inventory
from aoe_runner.runs.manifest import BankFile, BankInventory
from tests.releases.conftest import Releases, tree
from tests.tune.runner import aoe_runner

HOSTILE_TOOL = """
import os, shutil, sys
mode = os.environ["FAKE_MERGE_MODE"]
target = sys.argv[3]
if mode == "replace-output":
    shutil.rmtree(target)
    os.symlink("/etc", target)
elif mode == "against-the-rules":
    for name in ("Ascend910B3/cube/ok.bin", "runtime_kb_x.json", "Ascend310P3/cube/other.bin"):
        os.makedirs(os.path.dirname(os.path.join(target, name)) or target, exist_ok=True)
        open(os.path.join(target, name), "w").write(name)
"""  # mode "nothing": writes nothing, exits 0


def _link(path: str, target: str) -> BankFile:
    return BankFile(path=path, size=len(target), sha256=hashlib.sha256(target.encode()).hexdigest(), link=target)


@pytest.mark.parametrize(
    "links",
    [
        [_link("a", "/etc/passwd")],
        [_link("sub/a", "../../x")],
        [_link("Ascend910B3/sub/x", "../.."), _link("Ascend910B3/esc", "sub/x/../..")],  # a chain through a link
        [_link("d", "x"), _link("e", "d/y")],  # through another link, wherever it leads
    ],
)
def test_a_link_that_leaves_the_bank_or_passes_through_another_link_is_refused(links: list[BankFile]) -> None:
    inventory = BankInventory(directory="v", exists=True, files=links, taken_at=datetime.now(timezone.utc))
    with pytest.raises(InputError, match="outside the bank or through another link"):
        check_inventory(inventory, "version t@1")


def test_links_inside_the_bank_are_kept() -> None:
    links = [_link("Ascend910B3/cube/a.bin", "b.bin"), _link("Ascend910B3/up", "../subgraph.json"), _link("top", ".")]
    check_inventory(BankInventory(directory="v", exists=True, files=links, taken_at=datetime.now(timezone.utc)), "v")


def _hostile_toolkit(root: Path) -> dict[str, str]:
    tool = root / "toolkit" / "python" / "site-packages" / "schedule_search" / "msoptune.py"
    tool.parent.mkdir(parents=True)
    tool.write_text(HOSTILE_TOOL)
    return {"ASCEND_TOOLKIT_HOME": str(root / "toolkit"), "HOME": str(root / "user")}


@pytest.mark.slow  # several real tunes; the fast set keeps the round trip and the refusals
@pytest.mark.parametrize(
    ("mode", "code", "said"),
    [
        ("replace-output", 4, "AOE's merge tool replaced its output directory"),
        ("nothing", 1, "wrote no bank file: nothing was published"),
        ("against-the-rules", 0, "left out runtime_kb_x.json: a runtime_kb file, which AOE never merges, in what the merge"),
    ],
)
def test_what_a_merge_tool_writes_is_held_to_the_rules(releases: Releases, mode: str, code: int, said: str) -> None:
    one = releases.tune_files("Ascend910B3/cube/a.bin=one", bank="bank-a")
    two = releases.tune_files("Ascend910B3/cube/a.bin=two", bank="bank-b")
    env = {**_hostile_toolkit(releases.root), "FAKE_MERGE_MODE": mode}
    done = aoe_runner(
        releases, "bank", "publish", "--from", one, "--from", two, "--name", "m", "--unverified", "--merge-with-aoe", env=env
    )
    assert done.returncode == code and said in done.stderr, done.stderr
    versions = releases.versions()
    assert [version["files"] for version in versions] == ([1] if code == 0 else [])


def test_an_env_file_that_cannot_be_written_stops_the_pull_before_anything_changes(releases: Releases) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=one")
    assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0
    target = releases.root / "pulled"
    fifo, device_link = releases.root / "fifo", releases.root / "null"
    os.mkfifo(fifo)
    device_link.symlink_to("/dev/null")
    for env_file, said in (
        (releases.root / "no" / "such" / "dir" / "f", "--env-file: cannot be written there"),
        (releases.root, "--env-file: cannot write: it is a directory"),
        (fifo, "--env-file: cannot write: it is not a regular file"),  # it was replaced by a regular file
        (device_link, "--env-file: cannot write: it is not a regular file"),  # as root, /dev/null itself was
    ):
        refused = releases.run("bank", "pull", "resnet", "--to", str(target), "--env-file", str(env_file))
        assert refused.returncode == 4 and said in refused.stderr, refused.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and device_link.is_symlink()
    assert not os.path.lexists(target) and not (releases.root / ".pulled.versions").exists()


def test_an_env_file_through_a_link_is_written_to_its_target_and_the_link_stays(releases: Releases) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=one")
    assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0
    (releases.root / "job.env").write_text("old\n")
    (releases.root / "env-link").symlink_to("job.env")
    pulled = releases.run(
        "bank", "pull", "resnet", "--to", str(releases.root / "b"), "--env-file", str(releases.root / "env-link")
    )
    assert pulled.returncode == 0, pulled.stderr
    assert (releases.root / "env-link").is_symlink() and "TUNE_BANK_PATH" in (releases.root / "job.env").read_text()


def test_a_refused_rollback_leaves_nothing_beside_the_path(releases: Releases) -> None:
    (releases.root / "bank2").mkdir()
    assert releases.run("bank", "rollback", str(releases.root / "bank2")).returncode == 1
    assert not (releases.root / ".bank2.versions").exists()


@pytest.mark.slow  # several real tunes; the fast set keeps the round trip and the refusals
def test_a_removal_waits_for_a_publish_that_is_reading_its_runs(releases: Releases) -> None:
    """A publish holds the removal lock shared from reading its runs to recording the version: a prune started
    meanwhile waits, then sees the version and keeps its run."""
    from aoe_runner.runs.history import RunStore
    from aoe_runner.runs.prune import keeping_runs

    run = releases.tune_files("Ascend910B3/cube/a.bin=one")
    store = RunStore(releases.root / "home")
    with keeping_runs(store):
        command = [sys.executable, "-m", "aoe_runner", "runs", "prune", "--keep", "0", "--yes"]
        pruning = subprocess.Popen(command, env=releases.env, cwd=releases.root, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        assert pruning.poll() is None  # waiting
        assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0  # shares the lock
    _, err = pruning.communicate(timeout=60)
    assert pruning.returncode == 0, err
    assert f"run {run} is kept: resnet@1 was published from it" in err
    target = releases.root / "pulled"
    assert releases.run("bank", "pull", "resnet", "--to", str(target)).returncode == 0
    assert tree(target) == {"Ascend910B3/cube/a.bin": b"one"}


@pytest.mark.slow  # several real tunes; the fast set keeps the round trip and the refusals
def test_a_shared_store_that_cannot_be_reached_lists_this_homes_versions_and_refuses_to_number_new_ones(
    releases: Releases,
) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=one")
    assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0
    away = {"AOE_RUNNER_STORE": "postgresql://aoe@127.0.0.1:9/aoe", "HOME": str(releases.root / "user")}
    listed = aoe_runner(releases, "bank", "versions", "--json", env=away)
    assert listed.returncode == 0 and '"resnet"' in listed.stdout
    assert "the shared store's bank versions are not listed" in listed.stderr
    refused = aoe_runner(releases, "bank", "publish", run, "--name", "resnet", "--unverified", env=away)
    assert refused.returncode == 4 and refused.stderr.count("\n") == 1, refused.stderr
    assert len(releases.versions()) == 1


def test_a_damaged_version_record_is_said_and_the_others_still_listed(releases: Releases) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=one")
    for name in ("good", "bad"):
        assert releases.run("bank", "publish", run, "--name", name, "--unverified").returncode == 0
    damaged = releases.root / "home" / "releases" / "bad" / "1.json"
    damaged.write_text("{not json")
    listed = releases.run("bank", "versions", "--json")
    assert listed.returncode == 0 and [line for line in listed.stdout.splitlines() if '"good"' in line]
    assert f"{damaged}: not a bank version record" in listed.stderr and "skipped" in listed.stderr
    pruned = releases.run("runs", "prune", "--keep", "0", "--yes")  # which runs "bad" needs is unknown: none go
    assert pruned.returncode == 4 and f"{damaged}: cannot read the published version" in pruned.stderr
    assert run in releases.run("runs", "list").stdout
    (releases.root / ".pulled.versions").write_text("a file where the versions go")
    refused = releases.run("bank", "pull", "good", "--to", str(releases.root / "pulled"))
    assert refused.returncode == 1 and "not a directory (a symbolic link, or a file)" in refused.stderr


def test_a_full_disk_while_an_inventory_is_stored_is_a_write_error_naming_the_store(tiny_disk: Path) -> None:
    from aoe_runner.runs.blobs import BlobStore

    (tiny_disk / "fill").write_bytes(b"\0" * ((1 << 20) - 4096))  # what is left holds no inventory's directory
    files = [BankFile(path=f"op_{n}.bin", size=1, sha256="0" * 64) for n in range(2000)]
    inventory = BankInventory(directory="bank", exists=True, files=files, taken_at=datetime.now(timezone.utc))
    with pytest.raises(InputError) as failed:
        BlobStore(tiny_disk / "home").save_inventory(inventory)
    assert (
        failed.value.message == f"{tiny_disk / 'home' / 'inventories'}: cannot write the bank inventory: No space left on device"
    )
    assert not [path for path in (tiny_disk / "home").rglob("*") if path.is_file()]  # nothing half-written


def test_a_pull_onto_a_full_disk_stops_before_anything_changes(releases: Releases, tiny_disk: Path) -> None:
    run = releases.tune_files(*(f"Ascend910B3/cube/op_{n}.bin={'x' * 100_000}" for n in range(12)))  # 1.2 MB: too big
    assert releases.run("bank", "publish", run, "--name", "big", "--unverified").returncode == 0
    target = tiny_disk / "bank"
    refused = releases.run("bank", "pull", "big", "--to", str(target))
    assert refused.returncode == 4 and refused.stderr.endswith(": cannot write: No space left on device\n"), refused.stderr
    assert not os.path.lexists(target) and os.listdir(tiny_disk / ".bank.versions") == ["pull.lock"]


def test_a_versions_directory_another_user_owns_or_may_write_in_is_refused(releases: Releases) -> None:
    run = releases.tune_files("Ascend910B3/cube/a.bin=one")
    assert releases.run("bank", "publish", run, "--name", "resnet", "--unverified").returncode == 0
    target = releases.root / "pulled"
    assert releases.run("bank", "pull", "resnet", "--to", str(target)).returncode == 0
    place = releases.root / ".pulled.versions"
    place.chmod(0o777)
    writable = releases.run("bank", "pull", "resnet", "--to", str(target))
    assert writable.returncode == 1 and "other users may write in it (mode 777)" in writable.stderr
    place.chmod(0o755)
    if os.geteuid() == 0:
        os.chown(place, 4321, -1)
        owned = releases.run("bank", "rollback", str(target))
        assert owned.returncode == 1 and "owned by user 4321, not by you" in owned.stderr
