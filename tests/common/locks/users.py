"""Run a snippet of Python as another local user (root only), in a directory tree every user can reach."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

NOBODY = 65534
ANOTHER = 65533

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv to act as other users"
)

TAKE_DEVICE_LOCK = """\
import sys, time
from pathlib import Path
from aoe_runner.common.devlock import DeviceLock, LockHolder
from aoe_runner.common.lock_directory import LockUnusable
from aoe_runner.common.locks import LockBusy
directory, device, hold = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
time.sleep(max(0.0, float(__import__("os").environ.get("START_AT", "0")) - time.time()))  # a race starts together
for name in sys.argv[4:]:  # files to try to delete first, as a careless or hostile user would
    try:
        (directory / name).unlink()
        print("deleted", name, flush=True)
    except OSError as error:
        print("cannot delete", name, error.strerror, flush=True)
try:
    lock = DeviceLock(device, directory).acquire(LockHolder.here(f"holder as uid {__import__('os').geteuid()}"))
except (LockBusy, LockUnusable) as error:
    print(type(error).__name__, error.message, flush=True)
    sys.exit(1)
print("held", flush=True)
time.sleep(hold)
"""


def as_user(uid: int, code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start `python -c code args` as uid (and its own gid, no groups), output piped."""
    command = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", sys.executable, "-c", code, *args]
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": "/", **(env or {})}
    return subprocess.Popen(command, env=environment, cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def take_device_lock(
    uid: int, directory: Path, device: int, hold_s: float, *delete_first: str, start_at: float = 0.0
) -> subprocess.Popen[str]:
    """As uid: delete the files named (printing what happened), then take the lock and hold it, or print why not."""
    arguments = (str(directory), str(device), str(hold_s), *delete_first)
    return as_user(uid, TAKE_DEVICE_LOCK, *arguments, env={"START_AT": str(start_at)})


def finished(process: subprocess.Popen[str]) -> tuple[int, str]:
    out, err = process.communicate(timeout=60)
    assert not err, err
    return process.returncode, out


def make_shared_tree() -> Path:
    """A root-owned directory under /tmp that every user can enter, with a root-owned sticky `locks/` in it."""
    top = Path(tempfile.mkdtemp(prefix="aoe-runner-test-", dir="/tmp"))
    os.chmod(top, 0o755)
    (top / "locks").mkdir()
    os.chmod(top / "locks", 0o1777)
    return top
