"""The shared lock directory against other local users: FIFOs, directories, symlinks, foreign owners, deletions.

Real files, real FIFOs, real other uids (through setpriv, as root) and real processes racing for one device.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aoe_runner.common.devlock import DeviceBusy, DeviceLock, LockHolder, current_holder
from aoe_runner.common.lock_directory import LockUnusable
from tests.common.locks.users import ANOTHER, NOBODY, finished, make_shared_tree, needs_root, take_device_lock
from tests.conftest import ROOT
from tests.tune.runner import Home, tune_command

pytestmark = pytest.mark.slow  # crowds of users and processes racing for one lock

PROTECTED_REGULAR = Path("/proc/sys/fs/protected_regular")


@pytest.fixture
def shared_tree() -> Iterator[Path]:
    top = make_shared_tree()
    yield top
    shutil.rmtree(top)


@pytest.fixture
def protected_regular() -> Iterator[None]:
    """fs.protected_regular=1, the usual distribution default, for the length of one test."""
    if os.geteuid() != 0 or not os.access(PROTECTED_REGULAR, os.W_OK):
        pytest.skip("needs root and a writable fs.protected_regular")
    before = PROTECTED_REGULAR.read_text()
    PROTECTED_REGULAR.write_text("1")
    yield
    PROTECTED_REGULAR.write_text(before)


def _plant(kind: str, path: Path, elsewhere: Path) -> None:
    if kind == "FIFO":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        elsewhere.write_text("not a lock")
        path.symlink_to(elsewhere)


def _run(home: Home, *argv: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a real process, bounded: a lock that hangs must fail the test, not the whole suite."""
    command = list(argv) if argv[0] == sys.executable else [sys.executable, "-m", "aoe_runner", *argv]
    return subprocess.run(command, env=home.env, cwd=home.root, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("kind", ["FIFO", "directory", "symlink"])
def test_a_fifo_directory_or_symlink_in_the_place_of_my_lock_is_refused_in_one_line(tmp_path: Path, kind: str) -> None:
    home = Home(tmp_path)
    (tmp_path / "locks").mkdir()
    mine = DeviceLock(0, tmp_path / "locks").path
    _plant(kind, mine, tmp_path / "elsewhere")
    line = f"error: {mine}: a {kind} owned by root, not an aoe-runner lock; refusing to use it (remove it)\n"

    preflight = _run(home, "preflight", "--mode", "op", "--json")
    assert preflight.returncode == 1  # a failed check, with the reason, never "free"
    (check,) = [check for check in json.loads(preflight.stdout)["checks"] if check["id"] == "device_free"]
    assert check["status"] == "fail" and line.removeprefix("error: ").strip() in check["observed"]
    run = _run(home, *tune_command("exit", "0"))
    assert run.returncode == 4 and run.stderr.endswith(line) and run.stderr.count("error:") == 1
    assert home.manifests() == []
    if kind == "symlink":
        assert (tmp_path / "elsewhere").read_text() == "not a lock"


@pytest.mark.parametrize("kind", ["FIFO", "directory", "symlink"])
def test_junk_under_the_old_lock_name_or_another_users_name_blocks_nothing(tmp_path: Path, kind: str) -> None:
    home = Home(tmp_path)
    (tmp_path / "locks").mkdir()
    _plant(kind, tmp_path / "locks" / "device-0.lock", tmp_path / "elsewhere")  # hung preflight and tune, or exit 3
    _plant(kind, tmp_path / "locks" / "device-0.uid-12345.lock", tmp_path / "elsewhere-too")  # not owned by uid 12345

    preflight = _run(home, "preflight", "--mode", "op", "-v")
    assert "device 0 free" in preflight.stdout and preflight.returncode in (0, 1)
    run = _run(home, *tune_command("exit", "0"))
    assert run.returncode == 0, run.stderr
    assert home.only_manifest()["status"] == "succeeded"


def _refusal(directory: Path) -> str:
    with pytest.raises(LockUnusable) as refused:
        DeviceLock(0, directory).acquire(LockHolder.here("test"))
    with pytest.raises(LockUnusable) as seen:
        current_holder(0, directory)  # preflight's view: a problem, never "free"
    assert seen.value.message == refused.value.message
    assert list(directory.glob("device-0.*")) == []  # nothing was created in an untrusted directory
    return refused.value.message


@needs_root
def test_a_lock_directory_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    (tmp_path / "locks").mkdir(mode=0o1777)
    os.chown(tmp_path / "locks", NOBODY, NOBODY)
    assert _refusal(tmp_path / "locks") == (
        f"{tmp_path / 'locks'}: owned by nobody, who could remove other users' locks; "
        f"ask root to run 'install -d -m 1777 -o root {tmp_path / 'locks'}', or set AOE_RUNNER_LOCK_DIR"
    )


def test_a_lock_directory_anyone_may_empty_is_refused(tmp_path: Path) -> None:
    (tmp_path / "locks").mkdir()
    os.chmod(tmp_path / "locks", 0o777)
    assert _refusal(tmp_path / "locks") == (
        f"{tmp_path / 'locks'}: writable by other users but not sticky, so anyone could replace a lock; "
        f"run 'chmod +t {tmp_path / 'locks'}'"
    )


def test_a_directory_above_the_lock_directory_that_anyone_may_rename_in_is_refused(tmp_path: Path) -> None:
    (tmp_path / "open" / "locks").mkdir(parents=True)
    os.chmod(tmp_path / "open", 0o777)
    os.chmod(tmp_path / "open" / "locks", 0o1777)
    assert _refusal(tmp_path / "open" / "locks").startswith(f"{tmp_path / 'open'}: writable by other users but not sticky")


@needs_root
def test_a_symlinked_lock_directory_is_followed_only_when_its_owner_is_trusted(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir(mode=0o755)
    (tmp_path / "locks").symlink_to(tmp_path / "real")
    with DeviceLock(0, tmp_path / "locks").acquire(LockHolder.here("through a root-owned symlink")):
        assert [path.name for path in (tmp_path / "real").iterdir()] == [f"device-0.uid-{os.geteuid()}.lock"]
    (tmp_path / "real" / f"device-0.uid-{os.geteuid()}.lock").unlink()
    os.lchown(tmp_path / "locks", NOBODY, NOBODY)  # nobody could point it elsewhere, for some runs and not others
    assert _refusal(tmp_path / "locks").startswith(f"{tmp_path / 'locks'}: owned by nobody, who could remove")


@needs_root
def test_another_user_cannot_delete_a_held_lock_and_take_the_device(shared_tree: Path) -> None:
    locks = shared_tree / "locks"
    assert finished(take_device_lock(NOBODY, locks, 0, 0))[0] == 0  # nobody has tuned device 0 before
    with DeviceLock(0, locks).acquire(LockHolder.here("root's long run")) as held:
        before = os.stat(held.path)
        code, out = finished(take_device_lock(NOBODY, locks, 0, 0, *sorted(os.listdir(locks))))
        assert code == 1, out
        assert f"cannot delete device-0.uid-{os.geteuid()}.lock Operation not permitted" in out
        assert f"DeviceBusy device 0 is being tuned by another run (user root, pid {os.getpid()}" in out
        assert os.stat(held.path).st_ino == before.st_ino
    assert finished(take_device_lock(NOBODY, locks, 0, 0))[0] == 0  # released: nobody may tune it now


@needs_root
def test_a_file_of_another_user_in_my_place_is_refused_naming_who_can_remove_it(shared_tree: Path) -> None:
    locks = shared_tree / "locks"
    mine = DeviceLock(0, locks).path
    mine.touch(mode=0o666)
    os.chown(mine, NOBODY, NOBODY)
    with pytest.raises(LockUnusable) as refused:
        DeviceLock(0, locks).acquire(LockHolder.here("test"))
    assert refused.value.message == (
        f"{mine}: a file owned by nobody, not an aoe-runner lock; refusing to use it (only nobody or root can remove it)"
    )


@needs_root
@pytest.mark.usefixtures("protected_regular")
def test_with_protected_regular_users_share_a_device_and_exactly_one_of_a_crowd_wins(shared_tree: Path) -> None:
    locks = shared_tree / "locks"
    for uid in (NOBODY, 0, ANOTHER, NOBODY, 0):  # each finds lock files that other users created
        code, out = finished(take_device_lock(uid, locks, 3, 0))
        assert (code, out) == (0, "held\n"), uid

    start_at = time.time() + 1.5
    crowd = [take_device_lock(uid, locks, 3, 2.5, start_at=start_at) for uid in (0, NOBODY, ANOTHER) * 3]
    outcomes = [finished(process) for process in crowd]
    winners = [outcome for outcome in outcomes if outcome == (0, "held\n")]
    losers = [out for code, out in outcomes if code == 1 and out.startswith("DeviceBusy device 3 is being tuned by another run")]
    assert (len(winners), len(losers)) == (1, 8), outcomes


LEAVE_A_CHILD_HOLDING_THE_LOCK = """\
import subprocess, sys
from pathlib import Path
from aoe_runner.common.devlock import DeviceLock, LockHolder
with DeviceLock(7, Path(sys.argv[1])).acquire(LockHolder.here("aoe-runner tune train.py (run 1)")) as lock:
    child = subprocess.Popen(["sleep", "60"], pass_fds=lock.inherited_fds(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
"""


def test_a_process_a_run_left_behind_keeps_the_lock_and_the_runs_name(tmp_path: Path) -> None:
    runner = subprocess.run(
        [sys.executable, "-c", LEAVE_A_CHILD_HOLDING_THE_LOCK, str(tmp_path / "locks")],
        capture_output=True, text=True, timeout=30, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    leftover = int(runner.stdout)
    try:
        holder = current_holder(7, tmp_path / "locks")
        assert holder is not None and holder.command == "aoe-runner tune train.py (run 1)"
        with pytest.raises(
            DeviceBusy, match=r"device 7 is being tuned by another run \(user .*: aoe-runner tune train.py \(run 1\)\)"
        ):
            DeviceLock(7, tmp_path / "locks").acquire(LockHolder.here("the next run"))
    finally:
        os.kill(leftover, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while current_holder(7, tmp_path / "locks") is not None and time.monotonic() < deadline:
        time.sleep(0.05)  # init reaps the orphan a moment after it dies
    assert current_holder(7, tmp_path / "locks") is None


@pytest.mark.parametrize(
    "content",
    [b"[" * 60_000, b"", b"null", b'{"pid": "5", "user": "u", "host": "h", "started_at": "t", "command": "c"}', b"\xff\xfe"],
)
def test_what_another_users_lock_file_holds_is_a_holder_or_nobody_never_a_crash(content: bytes) -> None:
    """The file is another user's to write: nested brackets once raised RecursionError in every preflight and tune."""
    assert LockHolder.from_json(content) is None


def test_a_holder_with_a_very_long_command_still_fits_what_a_reader_reads() -> None:
    holder = LockHolder(user="tuner", pid=7, host="h", started_at="t", command="train.py " + "\u4e2d" * 50_000)
    written = holder.to_json()
    assert len(written) < 65536  # readers read 64 KiB: a longer name would read as a holder not written yet
    read = LockHolder.from_json(written)
    assert read is not None and read.pid == 7 and read.command.startswith("train.py \u4e2d") and read.command.endswith("...")


@needs_root
def test_a_holder_is_named_by_its_lock_files_owner_whatever_the_file_says(shared_tree: Path) -> None:
    """Issue 42, finding 10: nobody's lock file that claims root, pid 1 is shown as nobody's, with the file's claims."""
    locks = shared_tree / "locks"
    holding = take_device_lock(NOBODY, locks, 0, 5)
    assert holding.stdout is not None and holding.stdout.readline() == "held\n"
    theirs = locks / f"device-0.uid-{NOBODY}.lock"
    forged = json.dumps({"user": "root", "pid": 1, "host": "h", "started_at": "t", "command": "c"}).encode()
    fd = os.open(theirs, os.O_WRONLY)  # as nobody could: the file is theirs
    os.ftruncate(fd, 0)
    os.pwrite(fd, forged, 0)
    os.close(fd)
    holder = current_holder(0, locks)
    assert holder is not None and (holder.user, holder.pid, holder.command) == ("nobody", 1, "c")
    with pytest.raises(DeviceBusy) as refused:
        DeviceLock(0, locks).acquire(LockHolder.here("mine"))
    assert "(user nobody, pid 1 on h" in refused.value.message
    holding.kill()
    holding.communicate(timeout=30)


def test_a_relative_lock_directory_is_refused_not_made_in_each_working_directory(tmp_path: Path) -> None:
    """AOE_RUNNER_LOCK_DIR=tmp/locks (a / left out) gave each working directory its own device locks: two runs
    started in two directories tuned device 0 at once. It is refused, before the script starts."""
    home = Home(tmp_path)
    env = {**home.env, "AOE_RUNNER_LOCK_DIR": "tmp/aoe-locks"}
    done = subprocess.run(
        tune_command("progress", "--reports", "1", "--interval", "0"), env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 4 and "AOE_RUNNER_LOCK_DIR='tmp/aoe-locks': not an absolute path" in done.stderr, done.stderr
    assert not (tmp_path / "tmp").exists() and home.manifests() == []
