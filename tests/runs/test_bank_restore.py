"""Bank snapshots and `bank restore` on real files: symlinks, modes, directories, full disks, other users, the lock.

A restore writes nowhere outside the bank, follows no symlink, puts back modes and links, removes only the
empty directories a run created, and is refused while another aoe-runner holds the bank.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from aoe_runner.common.devlock import BankBusy, BankLock, LockHolder
from aoe_runner.common.jsontext import load_json
from aoe_runner.errors import InputError
from aoe_runner.runs.bank import changes_between, take_inventory
from aoe_runner.runs.blobs import BlobStore
from aoe_runner.runs.manifest import RunManifest
from aoe_runner.runs.restore import BankInUse, apply_restore, plan_restore, refuse_if_in_use
from tests.common.locks.users import NOBODY, as_user, finished, make_shared_tree, needs_root
from tests.conftest import ROOT
from tests.tune.runner import Home, aoe_runner, tune, wait_for_output


def _recorded_run(home: Home) -> str:
    """One real tuning run of the simulator on home/bank; its id."""
    code, _, err = tune(home, "exit", "0", options=("--bank", "bank"))
    assert code == 0, err
    return home.only_manifest()["id"]


def _blob_of(home: Home, run_id: str, relative: str) -> Path:
    """Where the run's snapshot keeps the content of one bank file."""
    store = BlobStore(home.root / "home")
    manifest = load_json(RunManifest, (home.root / "home" / "runs" / run_id / "manifest.json").read_bytes())
    (file,) = [file for file in store.expand(manifest.bank_before).files if file.path == relative]
    return store.blob_path(file.sha256)


def _restore(bank: Path, snapshot: BlobStore, before, backup: Path) -> None:  # type: ignore[no-untyped-def]
    apply_restore(plan_restore(before, snapshot), backup)


@pytest.fixture
def home(tmp_path: Path) -> Home:
    (tmp_path / "bank" / "sub").mkdir(parents=True)
    (tmp_path / "bank" / "sub" / "x").write_bytes(b"the strategy before the run")
    return Home(tmp_path)


def test_a_symlink_planted_in_the_bank_is_removed_not_written_through(home: Home) -> None:
    run_id = _recorded_run(home)
    outside = home.root / "outside"
    outside.mkdir()
    (outside / "x").write_bytes(b"somebody else's file")
    shutil.rmtree(home.root / "bank" / "sub")
    (home.root / "bank" / "sub").symlink_to(outside)

    preview = aoe_runner(home, "bank", "restore", run_id, "--dry-run")
    restored = aoe_runner(home, "bank", "restore", run_id)

    assert (outside / "x").read_bytes() == b"somebody else's file" and sorted(os.listdir(outside)) == ["x"]
    assert restored.returncode == 0, restored.stderr
    assert preview.stdout == "restore sub/x\nremove  sub\ncreate  sub/\n"
    assert not (home.root / "bank" / "sub").is_symlink()
    assert (home.root / "bank" / "sub" / "x").read_bytes() == b"the strategy before the run"
    (backup,) = (home.root / "home" / "bank-backups").iterdir()
    assert os.readlink(backup / "sub") == str(outside)  # what was replaced is kept, as it was


def test_a_restore_run_again_within_the_same_second_backs_up_beside_the_first(home: Home) -> None:
    """The backup directory is named to the second and its files made with O_EXCL: a restore run again at once
    (after an interrupted one, or twice in a row) failed with 'File exists' and restored nothing. Backups of this
    second and the next few are made beforehand, so the test does not race the clock."""
    from datetime import timedelta

    run_id = _recorded_run(home)
    (home.root / "bank" / "sub" / "x").write_bytes(b"tuned")
    backups = home.root / "home" / "bank-backups"
    now = datetime.now()
    taken = [backups / f"{now + timedelta(seconds=k):%Y%m%d-%H%M%S}-before-restoring-{run_id}" for k in range(4)]
    for directory in taken:
        (directory / "sub").mkdir(parents=True)
        (directory / "sub" / "x").write_bytes(b"an earlier backup")

    restored = aoe_runner(home, "bank", "restore", run_id)

    assert restored.returncode == 0, restored.stderr
    assert (home.root / "bank" / "sub" / "x").read_bytes() == b"the strategy before the run"
    assert all((directory / "sub" / "x").read_bytes() == b"an earlier backup" for directory in taken)
    (new,) = set(backups.iterdir()) - set(taken)
    assert (new / "sub" / "x").read_bytes() == b"tuned"


def test_a_symlink_planted_in_the_snapshot_is_not_followed(home: Home) -> None:
    run_id = _recorded_run(home)
    elsewhere = home.root / "elsewhere"
    elsewhere.write_bytes(b"not from the snapshot")
    blob = _blob_of(home, run_id, "sub/x")
    blob.unlink()
    blob.symlink_to(elsewhere)
    (home.root / "bank" / "sub" / "x").unlink()

    refused = aoe_runner(home, "bank", "restore", run_id)

    assert refused.returncode == 4
    assert refused.stderr == f"error: {blob}: cannot read the bank snapshot: Too many levels of symbolic links\n"
    assert not (home.root / "bank" / "sub" / "x").exists()


def test_a_changed_blob_is_refused_by_its_hash(home: Home) -> None:
    run_id = _recorded_run(home)
    blob = _blob_of(home, run_id, "sub/x")
    blob.chmod(0o644)
    blob.write_bytes(b"tampered with")
    (home.root / "bank" / "sub" / "x").unlink()

    refused = aoe_runner(home, "bank", "restore", run_id)

    assert refused.returncode == 4
    assert refused.stderr == f"error: {blob}: differs from its recorded sha256; the snapshot was changed\n"
    assert not (home.root / "bank" / "sub" / "x").exists()


def test_a_symlink_in_the_bank_is_recorded_with_its_target_and_restored_never_followed(tmp_path: Path) -> None:
    bank, first, second = tmp_path / "bank", tmp_path / "first", tmp_path / "second"
    for directory in (bank, first, second):
        directory.mkdir()
    (first / "op.bin").write_bytes(b"first")
    (bank / "cube").symlink_to(first)
    before = take_inventory(bank, BlobStore(tmp_path / "store"))
    assert [(file.path, file.link, file.mode) for file in before.files] == [("cube", str(first), None)]
    assert before.symlinks == before.files and before.directories == []

    (first / "op.bin").write_bytes(b"changed behind the link")  # not the bank's: not a change of it
    (bank / "cube").unlink()
    (bank / "cube").symlink_to(second)
    (bank / "vector").symlink_to("cube")
    changes = changes_between(before, take_inventory(bank))
    assert (changes.added, changes.removed, changes.modified) == (["vector"], [], ["cube"])

    _restore(bank, BlobStore(tmp_path / "store"), before, tmp_path / "backup")
    assert os.readlink(bank / "cube") == str(first) and sorted(os.listdir(bank)) == ["cube"]
    assert (first / "op.bin").read_bytes() == b"changed behind the link" and os.listdir(second) == []


def test_restored_files_get_their_recorded_modes_back(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    for name, mode in (("tool.sh", 0o750), ("secret.bin", 0o600), ("plain.json", 0o644)):
        (bank / name).write_bytes(name.encode())
        os.chmod(bank / name, mode)
    before = take_inventory(bank, BlobStore(tmp_path / "store"))
    assert {file.path: file.mode for file in before.files} == {"plain.json": 0o644, "secret.bin": 0o600, "tool.sh": 0o750}

    (bank / "tool.sh").write_bytes(b"rewritten")
    os.chmod(bank / "tool.sh", 0o644)
    os.chmod(bank / "secret.bin", 0o666)  # only the mode changed
    assert changes_between(before, take_inventory(bank)).modified == ["secret.bin", "tool.sh"]
    _restore(bank, BlobStore(tmp_path / "store"), before, tmp_path / "backup")

    assert {path.name: path.stat().st_mode & 0o7777 for path in bank.iterdir()} == {
        "plain.json": 0o644,
        "secret.bin": 0o600,
        "tool.sh": 0o750,
    }
    assert (bank / "tool.sh").read_bytes() == b"tool.sh"


def test_a_restore_removes_the_empty_directories_a_run_created_and_only_those(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    (bank / "soc" / "cube").mkdir(parents=True)
    (bank / "soc" / "cube" / "op.bin").write_bytes(b"op")
    (bank / "kept-empty").mkdir()
    (bank / "removed-by-the-run").mkdir()
    before = take_inventory(bank, BlobStore(tmp_path / "store"))
    assert before.directories == ["kept-empty", "removed-by-the-run", "soc", "soc/cube"]

    (bank / "new" / "deeper").mkdir(parents=True)
    (bank / "soc" / "vector").mkdir()
    (bank / "soc" / "vector" / "op.bin").write_bytes(b"added")
    (bank / "removed-by-the-run").rmdir()
    plan = plan_restore(before, BlobStore(tmp_path / "store"))
    assert plan.lines() == [
        "remove  soc/vector/op.bin",
        "remove  soc/vector/ (when empty)",
        "remove  new/deeper/ (when empty)",
        "remove  new/ (when empty)",
        "create  removed-by-the-run/",
    ]
    (bank / "new" / "deeper" / "arrived-since.txt").write_text("not recorded: never removed")
    apply_restore(plan, tmp_path / "backup")

    left = sorted(path.relative_to(bank).as_posix() for path in bank.rglob("*"))
    assert left == [
        "kept-empty",
        "new",
        "new/deeper",
        "new/deeper/arrived-since.txt",
        "removed-by-the-run",
        "soc",
        "soc/cube",
        "soc/cube/op.bin",
    ]


def test_a_full_disk_while_taking_the_snapshot_is_a_write_error_naming_the_snapshot(tmp_path: Path, tiny_disk: Path) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    (bank / "big.bin").write_bytes(os.urandom(3 << 20))
    with pytest.raises(InputError) as failed:
        take_inventory(bank, BlobStore(tiny_disk / "home"))
    assert failed.value.message == (
        f"{tiny_disk / 'home' / 'blobs'}: cannot write the bank snapshot (storing {bank / 'big.bin'}): No space left on device"
    )
    assert [path.name for path in (tiny_disk / "home" / "blobs").iterdir()] == []  # no half-written blob left


def test_a_full_disk_while_restoring_names_the_bank_file_and_leaves_no_temporary(tmp_path: Path, tiny_disk: Path) -> None:
    bank = tiny_disk / "bank"
    bank.mkdir()
    (bank / "big.bin").write_bytes(os.urandom(600 << 10))
    (bank / "small.bin").write_bytes(b"small")
    before = take_inventory(bank, BlobStore(tmp_path / "store"))
    (bank / "big.bin").write_bytes(os.urandom(600 << 10))  # the copy back needs room for both

    with pytest.raises(InputError) as failed:
        _restore(bank, BlobStore(tmp_path / "store"), before, tmp_path / "backup")
    assert failed.value.message == f"{bank / 'big.bin'}: cannot write: No space left on device"
    assert sorted(os.listdir(bank)) == ["big.bin", "small.bin"]


INVENTORY_AS_ANOTHER_USER = """\
import sys
from pathlib import Path
from aoe_runner.errors import InputError
from aoe_runner.runs.bank import take_inventory
try:
    inventory = take_inventory(Path(sys.argv[1]))
except InputError as error:
    print("InputError", error.message)
else:
    print("listed", [file.path for file in inventory.files])
"""


@pytest.fixture
def shared_tree() -> Iterator[Path]:
    top = make_shared_tree()
    yield top
    shutil.rmtree(top)


@needs_root
def test_an_unreadable_part_of_the_bank_is_an_error_naming_it_never_left_out(shared_tree: Path) -> None:
    bank = shared_tree / "bank"
    (bank / "sub").mkdir(parents=True)
    (bank / "op.bin").write_bytes(b"op")
    (bank / "sub" / "secret.bin").write_bytes(b"secret")
    os.chmod(bank / "sub", 0o700)
    os.chmod(bank / "sub" / "secret.bin", 0o600)

    unreadable_directory = finished(as_user(NOBODY, INVENTORY_AS_ANOTHER_USER, str(bank)))
    os.chmod(bank / "sub", 0o755)
    unreadable_file = finished(as_user(NOBODY, INVENTORY_AS_ANOTHER_USER, str(bank)))

    assert unreadable_directory == (0, f"InputError {bank / 'sub'}: cannot read directory: Permission denied\n")
    assert unreadable_file == (0, f"InputError {bank / 'sub' / 'secret.bin'}: cannot read bank file: Permission denied\n")


def test_the_bank_lock_is_one_lock_whichever_path_reaches_the_bank(tmp_path: Path) -> None:
    (tmp_path / "bank").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "bank")
    assert BankLock(tmp_path / "link").path == BankLock(tmp_path / "bank").path
    with BankLock(tmp_path / "link").acquire(LockHolder.here("aoe-runner tune (through the link)")):
        with pytest.raises(BankBusy, match=r"^.*/bank is in use by another aoe-runner \(user .*through the link\)"):
            BankLock(tmp_path / "bank").acquire(LockHolder.here("aoe-runner bank restore"))


def test_a_live_run_on_a_bank_reached_through_a_symlink_is_seen(tmp_path: Path) -> None:
    (tmp_path / "bank").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "bank")
    live = SimpleNamespace(
        id="20261121-093001-bc23",
        kind="tune",
        bank=str(tmp_path / "link"),
        supervisor_pid=4242,
        script="train.py",
        arguments=["--epochs", "2"],
        started_at=datetime(2026, 11, 21, 9, 30, 1, tzinfo=timezone.utc),
        facts=SimpleNamespace(user="ops", hostname="node7"),
    )
    holder = "user ops, pid 4242 on node7, since 2026-11-21T09:30:01+00:00: aoe-runner tune train.py --epochs 2"
    with pytest.raises(
        BankInUse, match=re.escape(f"is being tuned by run 20261121-093001-bc23 ({holder} (run 20261121-093001-bc23))")
    ):
        refuse_if_in_use(tmp_path / "bank", [live])  # type: ignore[list-item]  (the fields the check reads)


HOLD_BANK_LOCK = """\
import sys, time
from pathlib import Path
from aoe_runner.common.devlock import BankLock, LockHolder
BankLock(Path(sys.argv[1])).acquire(LockHolder.here("aoe-runner tune train.py (taking its snapshot)"))
print("held", flush=True)
time.sleep(60)
"""


def test_a_restore_is_refused_while_another_process_holds_the_bank(home: Home) -> None:
    run_id = _recorded_run(home)
    (home.root / "bank" / "sub" / "x").write_bytes(b"tuned")
    (home.root / "link").symlink_to(home.root / "bank")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_BANK_LOCK, str(home.root / "link")],
        env={**home.env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_output(holder, "held")
        refused = aoe_runner(home, "bank", "restore", run_id)
    finally:
        holder.kill()
        holder.wait()

    assert refused.returncode == 1
    assert refused.stderr.startswith(f"error: {home.root / 'bank'} is in use by another aoe-runner (user ")
    assert f"pid {holder.pid} on " in refused.stderr
    assert refused.stderr.endswith(": aoe-runner tune train.py (taking its snapshot)); try again when it ends\n")
    assert (home.root / "bank" / "sub" / "x").read_bytes() == b"tuned"
    assert aoe_runner(home, "bank", "restore", run_id).returncode == 0  # the holder died: its lock went with it
    assert (home.root / "bank" / "sub" / "x").read_bytes() == b"the strategy before the run"
