"""A history that stays small: bank contents stored once, unchanged files not re-read, prune and rm
that give space back without ever losing what a kept run's restore needs, and finish what a crash interrupted."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from aoe_runner.errors import InputError
from aoe_runner.preflight.history import RECORD_ALLOWANCE
from aoe_runner.runs.bank import take_inventory
from aoe_runner.runs.blobs import BlobStore
from aoe_runner.runs.manifest import BankInventory
from tests.tune.runner import Home, aoe_runner, start_tune, tune, wait_for_output

pytestmark = pytest.mark.slow  # 35 real tune and prune processes, crashes and races: 30 s

HOUR_AGO = time.time() - 3600


@pytest.fixture
def home(tmp_path: Path) -> Home:
    bank = tmp_path / "bank" / "Ascend910B3" / "cube"
    bank.mkdir(parents=True)
    for index in range(20):
        path = bank / f"existing_{index}.bin"
        path.write_bytes(os.urandom(50_000))
        os.utime(path, (HOUR_AGO, HOUR_AGO))  # long before any inventory: trusted when unchanged
    return Home(tmp_path)


def store_files(home: Home) -> dict[str, int]:
    root = home.root / "home"
    return {
        str(path.relative_to(root)): path.stat().st_size
        for directory in ("blobs", "inventories")
        for path in (root / directory).rglob("*")
        if path.is_file()
    }


def recorded_hashes(home: Home, manifest: dict) -> dict[str, str]:
    """path -> sha256 of the bank as the run recorded it before starting."""
    inventory = BlobStore(home.root / "home").expand(TypeAdapter(BankInventory).validate_python(manifest["bank_before"]))
    return {file.path: file.sha256 for file in inventory.files}


def tune_bank(home: Home, *options: str) -> None:
    code, _, err = tune(home, "exit", "0", options=("--bank", str(home.root / "bank"), *options))
    assert code == 0, err


def test_an_unchanged_bank_costs_nothing_on_the_next_run(home: Home) -> None:
    tune_bank(home)
    before = store_files(home)
    assert sum(size for name, size in before.items() if name.startswith("blobs")) == 20 * 50_000

    tune_bank(home)

    assert store_files(home) == before  # no blob, no inventory: the same inventory is stored once
    first, second = home.manifests()
    assert second["bank_before"]["stored"] == first["bank_before"]["stored"] and second["bank_before"]["files"] == []
    assert (home.root / "home" / "runs" / second["id"] / "manifest.json").stat().st_size < 20_000


def test_unchanged_files_are_not_read_again_unless_rehash_asks(home: Home) -> None:
    tune_bank(home)
    victim = home.root / "bank" / "Ascend910B3" / "cube" / "existing_0.bin"
    stat = victim.stat()
    with open(victim, "r+b") as handle:  # same inode, same size, mtime put back: only reading can tell
        handle.write(b"X" * 100)
    os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    tune_bank(home)
    tune_bank(home, "--rehash")

    first, trusted, rehashed = (recorded_hashes(home, manifest) for manifest in home.manifests())
    path = "Ascend910B3/cube/existing_0.bin"
    assert trusted[path] == first[path]  # not read: the recorded hash stands
    assert rehashed[path] != first[path]  # read again: the change is seen


def test_prune_is_a_dry_run_by_default_and_keeps_what_kept_runs_restore(home: Home) -> None:
    for _ in range(3):
        code, _, err = tune(home, "progress", "--reports", "1", "--interval", "0", options=("--bank", str(home.root / "bank")))
        assert code == 0, err
    oldest, middle, newest = home.manifests()
    files_before = store_files(home)

    preview = aoe_runner(home, "runs", "prune", "--keep", "1")
    assert preview.returncode == 0 and f"would remove {oldest['id']}" in preview.stdout
    assert "would remove 2 runs" in preview.stdout and "pass --yes" in preview.stderr
    assert len(home.manifests()) == 3 and store_files(home) == files_before

    pruned = aoe_runner(home, "runs", "prune", "--keep", "1", "--yes")

    assert pruned.returncode == 0, pruned.stderr
    assert [m["id"] for m in home.manifests()] == [newest["id"]]
    listed = aoe_runner(home, "runs", "list", "--json")
    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == [newest["id"]]
    restored = aoe_runner(home, "bank", "restore", newest["id"])  # every blob it needs is still there
    assert restored.returncode == 0, restored.stderr
    cube = home.root / "bank" / "Ascend910B3" / "cube"
    assert sorted(path.name for path in cube.iterdir()) == sorted([f"existing_{i}.bin" for i in range(20)] + ["op_0.bin"])
    gone = aoe_runner(home, "runs", "show", oldest["id"])
    assert gone.returncode == 4


def test_prune_removes_blobs_only_removed_runs_needed(home: Home) -> None:
    tune_bank(home)
    first_blobs = {name for name in store_files(home) if name.startswith("blobs")}
    for path in (home.root / "bank" / "Ascend910B3" / "cube").iterdir():
        path.write_bytes(os.urandom(50_000))  # a whole new bank
    tune_bank(home)

    pruned = aoe_runner(home, "runs", "prune", "--keep", "1", "--yes")

    assert pruned.returncode == 0, pruned.stderr
    assert "1.0 MiB of stored bank contents" in pruned.stdout or "976.6 KiB of stored bank contents" in pruned.stdout
    left = {name for name in store_files(home) if name.startswith("blobs")}
    assert left and not (left & first_blobs)


def test_a_live_run_is_never_removed(home: Home) -> None:
    running = start_tune(home, "hang", options=("--bank", str(home.root / "bank")))
    try:
        wait_for_output(running, "ready")
        (manifest,) = home.manifests()
        refused = aoe_runner(home, "runs", "rm", manifest["id"])
        pruned = aoe_runner(home, "runs", "prune", "--keep", "0", "--yes")
    finally:
        running.send_signal(signal.SIGINT)
        running.communicate(timeout=60)

    assert refused.returncode == 1 and "is running" in refused.stderr
    assert pruned.returncode == 0 and "removed 0 runs" in pruned.stdout
    assert [m["id"] for m in home.manifests()] == [manifest["id"]]


@pytest.mark.parametrize("stopped_after", ["journal", "index", "trash"])
def test_an_interrupted_removal_is_finished_by_the_next(home: Home, stopped_after: str) -> None:
    for _ in range(3):
        tune_bank(home)
    oldest, middle, newest = home.manifests()
    root = home.root / "home"
    going = [oldest["id"], middle["id"]]
    (root / "prune.journal").write_text(json.dumps(going))  # the state a crash leaves after each step
    if stopped_after in ("index", "trash"):
        with sqlite3.connect(root / "runs.db") as db:
            db.executemany("DELETE FROM runs WHERE id = ?", [(run_id,) for run_id in going])
    if stopped_after == "trash":
        (root / "trash").mkdir(exist_ok=True)
        (root / "runs" / oldest["id"]).rename(root / "trash" / oldest["id"])

    finished = aoe_runner(home, "runs", "prune", "--status", "failed", "--yes")

    assert finished.returncode == 0, finished.stderr
    assert "finished an interrupted removal of 2 runs" in finished.stderr
    assert [m["id"] for m in home.manifests()] == [newest["id"]]
    assert not (root / "prune.journal").exists() and list((root / "trash").iterdir()) == []
    assert aoe_runner(home, "bank", "restore", newest["id"], "--dry-run").returncode == 0


def test_prune_needs_a_rule_and_rm_a_recorded_run(home: Home) -> None:
    bare = aoe_runner(home, "runs", "prune")
    assert bare.returncode == 2 and "runs prune needs --keep, --older-than, --status, --script or --kind" in bare.stderr
    missing = aoe_runner(home, "runs", "rm", "20990101")
    assert missing.returncode == 4 and "no recorded run has this id" in missing.stderr


@pytest.mark.parametrize("planted", ["trash", "blobs", "inventories", "runs"])
def test_prune_never_deletes_through_a_link_planted_in_the_home(home: Home, planted: str) -> None:
    """`ln -s ~/models home/trash` (or blobs, or inventories): a prune that removed nothing emptied ~/models, since
    the trash is emptied and the blob store collected on every prune."""
    tune_bank(home)
    elsewhere = home.root / "elsewhere"
    (elsewhere / "model").mkdir(parents=True)
    (elsewhere / "model" / "epoch90.ckpt").write_text("weeks of training\n")
    place = home.root / "home" / planted
    if place.exists():
        place.rename(place.with_name(f"{planted}.old"))
    place.symlink_to(elsewhere)

    pruned = aoe_runner(home, "runs", "prune", "--status", "failed", "--yes")

    assert pruned.returncode == 4, pruned.stderr
    assert f"error: {place}: is a symbolic link: runs are removed only inside the aoe-runner home" in pruned.stderr
    assert (elsewhere / "model" / "epoch90.ckpt").read_text() == "weeks of training\n"


def test_prune_refuses_a_home_anyone_may_write_to_and_works_in_a_new_one(home: Home, tmp_path: Path) -> None:
    tune_bank(home)
    (home.root / "home").chmod(0o777)
    refused = aoe_runner(home, "runs", "prune", "--keep", "0", "--yes")
    fresh = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "runs", "prune", "--keep", "0", "--yes"],
        env={**home.env, "AOE_RUNNER_HOME": str(tmp_path / "new")},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert refused.returncode == 4 and "anyone can write to it" in refused.stderr, refused.stderr
    assert len(home.manifests()) == 1
    assert fresh.returncode == 0 and "removed 0 runs" in fresh.stdout, fresh.stderr  # was exit 3: no home for its journal


def test_older_than_and_status_narrow_what_goes(home: Home) -> None:
    tune_bank(home)
    code, _, _ = tune(home, "exit", "3", options=("--bank", str(home.root / "bank")))
    assert code == 3
    failed = home.manifests()[-1]

    recent = aoe_runner(home, "runs", "prune", "--older-than", "1h", "--yes")
    only_failed = aoe_runner(home, "runs", "prune", "--status", "failed", "--yes")

    assert "removed 0 runs" in recent.stdout
    assert f"removed {failed['id']}" in only_failed.stdout and len(home.manifests()) == 1


def test_preflight_says_what_the_history_holds_and_what_the_next_run_adds(home: Home) -> None:
    bank = home.root / "bank"
    env = {**home.env, "TUNE_BANK_PATH": str(bank)}

    def history() -> dict:
        result = subprocess.run(
            [sys.executable, "-m", "aoe_runner", "preflight", "--json"], env=env, capture_output=True, text=True, timeout=60
        )
        return json.loads(result.stdout)["facts"]["history"]

    never_tuned = history()
    assert never_tuned["held_bytes"] == 0 and never_tuned["next_run_bytes"] == RECORD_ALLOWANCE + 20 * 50_000
    tune_bank(home)
    (bank / "Ascend910B3" / "cube" / "new.bin").write_bytes(b"n" * 4096)

    tuned = history()

    assert tuned["held_bytes"] >= 20 * 50_000  # the blobs, at least
    assert tuned["next_run_bytes"] == RECORD_ALLOWANCE + 4096  # only what the store does not hold yet
    recorded = home.manifests()[-1]["facts"]["history"]  # tune does not list the whole history before it starts
    assert recorded["held_bytes"] is None and recorded["next_run_bytes"] == RECORD_ALLOWANCE + 20 * 50_000


def test_blobs_are_kept_while_a_remaining_record_cannot_be_read(home: Home) -> None:
    tune_bank(home)
    for path in (home.root / "bank" / "Ascend910B3" / "cube").iterdir():
        path.write_bytes(os.urandom(50_000))
    tune_bank(home)
    tune_bank(home)
    first, broken, newest = home.manifests()
    (home.root / "home" / "runs" / broken["id"] / "manifest.json").write_text("{ not json")
    (home.root / "home" / "runs.db").unlink()  # rebuilt without the broken record
    blobs = {name for name in store_files(home) if name.startswith("blobs")}

    pruned = aoe_runner(home, "runs", "rm", first["id"])

    assert pruned.returncode == 0, pruned.stderr
    assert "1 run records could not be read" in pruned.stderr and "kept until they can be" in pruned.stderr
    assert {name for name in store_files(home) if name.startswith("blobs")} == blobs  # the broken run may need any


def test_a_damaged_stored_inventory_is_bad_input_and_the_next_run_reads_the_bank_again(tmp_path: Path) -> None:
    """Two flipped bytes in inventories/*.json.gz raised zlib.error: exit 3 for every later tune of that bank."""
    bank = tmp_path / "bank"
    bank.mkdir()
    (bank / "op.json").write_text("{}")
    store = BlobStore(tmp_path / "home")
    kept = store.save_inventory(take_inventory(bank, store))
    stored = next((tmp_path / "home" / "inventories").rglob("*.json.gz"))
    data = bytearray(stored.read_bytes())
    data[20:22] = bytes(255 - byte for byte in data[20:22])
    stored.write_bytes(bytes(data))

    with pytest.raises(InputError, match="cannot read the bank inventory"):
        store.expand(kept)
    assert store.last_inventory(bank) is None  # the next run reads every file of the bank, as on a first run


def _one_run_edited_by_hand(tmp_path: Path, where: tuple[str, ...], value: object) -> tuple[Home, dict]:
    """A home with one real run whose manifest's field at `where` (keys, outermost first) now holds `value`."""
    home = Home(tmp_path)
    code, _, err = tune(home, "exit", "0")
    assert code == 0, err
    (path,) = (tmp_path / "home" / "runs").glob("*/manifest.json")
    manifest = json.loads(path.read_text())
    held = manifest
    for key in where[:-1]:
        held = held[key]
    held[where[-1]] = value
    path.write_text(json.dumps(manifest))
    return home, manifest


@pytest.mark.parametrize(
    ("field", "value"),
    [("started_at", "2026-11-22T07:38:36"), ("ended_at", "2026-11-22T07:39:00"), ("device", 10**30)],
)
def test_a_hand_edited_manifest_with_a_time_without_zone_or_a_huge_device_is_listed_and_shown(
    tmp_path: Path, field: str, value: object
) -> None:
    """A naive time was subtracted from an aware one (TypeError), a device of 10**30 overflowed SQLite: exit 3 each."""
    home, manifest = _one_run_edited_by_hand(tmp_path, (field,), value)
    (tmp_path / "home" / "runs.db").unlink()  # rebuilt from the manifests

    listed, shown = aoe_runner(home, "runs", "list"), aoe_runner(home, "runs", "show", manifest["id"])
    assert (listed.returncode, shown.returncode) == (0, 0), listed.stderr + shown.stderr
    assert manifest["id"] in listed.stdout


@pytest.mark.parametrize(
    ("where", "value", "why"),
    [
        (("bank_before", "stored_bytes"), 10**400, "bank_before.stored_bytes: Input should be less than or equal to"),
        (("started_at",), "0001-01-01T00:30:00+05:00", "0001-01-01T00:30:00+05:00 cannot be told in UTC"),
        (("ended_at",), "9999-12-31T23:30:00-05:00", "9999-12-31T23:30:00-05:00 cannot be told in UTC"),
    ],
    ids=["a size of 10**400", "year 1 east of UTC", "year 9999 west of UTC"],
)
def test_a_hand_edited_manifest_beyond_what_a_run_can_record_is_one_line_and_the_history_page_skips_it(
    tmp_path: Path, where: tuple[str, ...], value: object, why: str
) -> None:
    """A size of 10**400 overflowed the history page's float division, year 1 at +05:00 has no UTC time: exit 3."""
    home, manifest = _one_run_edited_by_hand(tmp_path, where, value)

    shown = aoe_runner(home, "runs", "show", manifest["id"])
    page = aoe_runner(home, "runs", "report", "-o", str(tmp_path / "history.html"))

    assert shown.returncode == 4 and why in shown.stderr and shown.stderr.count("\n") == 1, shown.stderr
    assert why in page.stderr and "(skipped)" in page.stderr, page.stderr  # one line, then the history goes on
    assert page.returncode == 4 and "no tuning run to show" in page.stderr  # without it, nothing: no empty page


def test_a_duration_beyond_a_year_is_a_usage_error(tmp_path: Path) -> None:
    """Four hundred nines made an infinite --timeout: OverflowError in --dry-run, and a real run recorded no timeout."""
    ran = aoe_runner(Home(tmp_path), "tune", "train.py", "--mode", "op", "--timeout", "9" * 400 + "s", "--dry-run")
    assert ran.returncode == 2
    assert "--timeout: " in ran.stderr and "is more than 365d" in ran.stderr


def test_a_bank_file_whose_name_is_not_utf8_is_read_back_from_the_stored_inventory(tmp_path: Path) -> None:
    """Its name is stored as a lone surrogate's escape, which msgspec refuses: 'the bank after the run could not be
    listed', and no restore, for every run of such a bank."""
    bank = tmp_path / "bank"
    bank.mkdir()
    name = os.fsdecode(b"op\xff.json")
    (bank / name).write_text("{}")
    store = BlobStore(tmp_path / "home")
    kept = store.save_inventory(take_inventory(bank, store))

    assert [file.path for file in store.expand(kept).files] == [name]
    assert store.last_inventory(bank) is not None


def test_a_start_killed_before_its_record_leaves_collection_on_and_goes_after_an_hour(home: Home) -> None:
    """A tune killed while it inventoried the bank left a run directory with no manifest, which prune took for a
    record it could not read: stored bank contents were kept for good."""
    tune_bank(home)
    for path in (home.root / "bank" / "Ascend910B3" / "cube").iterdir():
        path.write_bytes(os.urandom(50_000))
    tune_bank(home)
    runs = home.root / "home" / "runs"
    dead, starting = runs / "20260101-000000-dead", runs / "20260101-000000-0new"
    for directory in (dead, starting):
        (directory / "work").mkdir(parents=True)
    os.utime(dead, (HOUR_AGO - 60, HOUR_AGO - 60))
    first, _ = home.manifests()
    blobs = {name for name in store_files(home) if name.startswith("blobs")}

    pruned = aoe_runner(home, "runs", "rm", first["id"])

    assert pruned.returncode == 0, pruned.stderr
    assert "could not be read" not in pruned.stderr
    assert {name for name in store_files(home) if name.startswith("blobs")} < blobs  # collected
    assert not dead.exists() and starting.is_dir()  # a start younger than an hour may still be running


def test_a_run_recorded_but_not_indexed_is_listed(home: Home) -> None:
    """Killed between writing its manifest and indexing it, a run was never listed (and blocked collection)."""
    tune_bank(home)
    tune_bank(home)
    older, newer = home.manifests()
    with sqlite3.connect(home.root / "home" / "runs.db") as db:
        db.execute("DELETE FROM runs WHERE id = ?", (older["id"],))

    listed = aoe_runner(home, "runs", "list", "--json")

    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == [newer["id"], older["id"]]


def test_runs_on_another_filesystem_than_the_home_are_removed_in_place(home: Home) -> None:
    """runs/ mounted apart from the home: the rename into trash/ failed with EXDEV, and so did every later prune."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    runs = home.root / "home" / "runs"
    runs.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(runs)], capture_output=True).returncode != 0:
        pytest.skip("this container cannot mount a tmpfs")
    try:
        tune_bank(home)
        tune_bank(home)
        older, newer = home.manifests()
        pruned = aoe_runner(home, "runs", "prune", "--keep", "1", "--yes")
        assert pruned.returncode == 0, pruned.stderr
        assert [m["id"] for m in home.manifests()] == [newer["id"]]
        assert not (home.root / "home" / "prune.journal").exists()
    finally:
        subprocess.run(["umount", "-l", str(runs)], check=True)


def test_a_removal_waits_for_the_one_under_way(home: Home) -> None:
    """Two prunes at once shared one journal: one could lose the other's removal."""
    import fcntl

    tune_bank(home)
    tune_bank(home)
    older, newer = home.manifests()
    fd = os.open(home.root / "home" / "prune.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a removal under way
        pruning = subprocess.Popen(
            [sys.executable, "-m", "aoe_runner", "runs", "rm", older["id"]],
            env=home.env,
            cwd=home.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        said = _first_line_with(pruning, "waiting for another runs prune or runs rm to finish", timeout_s=120)
        assert pruning.poll() is None and len(home.manifests()) == 2  # said, and waiting: not a silent wait
    finally:
        os.close(fd)
    _, err = pruning.communicate(timeout=120)
    assert pruning.returncode == 0, said + err
    assert [m["id"] for m in home.manifests()] == [newer["id"]]


def _first_line_with(process: subprocess.Popen[str], text: str, timeout_s: float) -> str:
    """What the process wrote on stderr up to the first line holding `text` (however long a busy machine takes to
    get there, up to timeout_s); fails if it ends or the time runs out first."""
    import selectors

    assert process.stderr is not None
    seen, deadline = "", time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(process.stderr, selectors.EVENT_READ)
        while text not in seen:
            assert selector.select(max(deadline - time.monotonic(), 0)), f"no {text!r} in time: {seen!r}"
            line = process.stderr.readline()
            assert line, f"the process ended without {text!r}: {seen!r}"
            seen += line
    return seen


def test_what_a_collect_keeps_is_decided_with_the_store_locked(tmp_path: Path) -> None:
    """prune listed the runs to keep before it locked the blob store: a run that recorded its manifest in between
    (naming blobs it had just written) lost them."""
    import fcntl

    store = BlobStore(tmp_path)
    held: list[bool] = []

    def kept() -> None:
        fd = os.open(tmp_path / "store.lock", os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # what a starting run's writer does, without waiting
            held.append(False)
        except BlockingIOError:
            held.append(True)
        finally:
            os.close(fd)

    assert store.collect(kept, []) is None  # None: nothing may go
    assert held == [True]


def test_a_record_that_names_another_run_or_none_is_not_indexed_and_removes_nothing_else(home: Home) -> None:
    """Indexed under the id it held, a record with `"id": ""` was removed by renaming runs/ itself: every run went."""
    for _ in range(3):
        tune_bank(home)
    first, second, third = home.manifests()
    runs = home.root / "home" / "runs"
    shutil.copytree(runs / first["id"], runs / "20260101-000000-copy")  # names the first run
    emptied = json.loads((runs / second["id"] / "manifest.json").read_text())
    emptied["id"] = ""
    (runs / second["id"] / "manifest.json").write_text(json.dumps(emptied))
    with sqlite3.connect(home.root / "home" / "runs.db") as db:
        db.execute("DELETE FROM runs WHERE id = ?", (second["id"],))

    listed = aoe_runner(home, "runs", "list", "--json")
    pruned = aoe_runner(home, "runs", "prune", "--keep", "0", "--yes")

    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == [third["id"], first["id"]]
    assert pruned.returncode == 0, pruned.stderr
    assert sorted(path.name for path in runs.iterdir()) == sorted([second["id"], "20260101-000000-copy"])


def test_a_manifest_that_is_a_fifo_or_a_device_is_not_read(home: Home) -> None:
    """A listing now reads unindexed records: a FIFO hung it for ever, a link to /dev/zero filled the memory."""
    tune_bank(home)
    runs = home.root / "home" / "runs"
    for name, make in (
        ("20260101-000000-fifo", lambda path: os.mkfifo(path)),
        ("20260101-000000-zero", lambda path: path.symlink_to("/dev/zero")),
    ):
        (runs / name).mkdir()
        make(runs / name / "manifest.json")
    listed = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "runs", "list", "--json"], env=home.env, capture_output=True, text=True, timeout=30
    )
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 1, listed.stderr


def test_a_removal_interrupted_is_finished_before_the_next_chooses_what_it_keeps(home: Home) -> None:
    """`--keep 2` after a removal of the two newest was interrupted counted them among the 2 it kept: none was left."""
    for _ in range(5):
        tune_bank(home)
    manifests = home.manifests()
    (home.root / "home" / "prune.journal").write_text(json.dumps([m["id"] for m in manifests[-2:]]))  # killed after this

    pruned = aoe_runner(home, "runs", "prune", "--keep", "2", "--yes")

    assert pruned.returncode == 0, pruned.stderr
    assert [m["id"] for m in home.manifests()] == [m["id"] for m in manifests[1:3]]


def test_a_listing_does_not_bring_back_what_a_removal_under_way_took_out(home: Home) -> None:
    import fcntl

    tune_bank(home)
    tune_bank(home)
    older, newer = home.manifests()
    with sqlite3.connect(home.root / "home" / "runs.db") as db:
        db.execute("DELETE FROM runs WHERE id = ?", (older["id"],))  # as a removal does before it moves the directory
    fd = os.open(home.root / "home" / "prune.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        during = aoe_runner(home, "runs", "list", "--json")
    finally:
        os.close(fd)
    after = aoe_runner(home, "runs", "list", "--json")
    assert [json.loads(line)["id"] for line in during.stdout.splitlines()] == [newer["id"]]
    assert [json.loads(line)["id"] for line in after.stdout.splitlines()] == [newer["id"], older["id"]]  # none under way
