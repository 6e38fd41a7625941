"""The per-device tuning lock, shared by every user of the host.

One file per device in a sticky, world-writable directory (`/tmp/aoe-runner-locks` unless
`AOE_RUNNER_LOCK_DIR` says otherwise), opened without following symlinks and held with flock for the
whole run. The kernel drops the lock when its holder dies, so a crashed run never blocks anyone; the
file's content only names the holder for the error message.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import tempfile
from pathlib import Path

from pydantic import BaseModel, ValidationError

from aoe_runner.errors import AoeRunnerError, ExitCode, InputError

LOCK_DIR_ENV = "AOE_RUNNER_LOCK_DIR"
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


class LockHolder(BaseModel):
    user: str
    pid: int
    host: str
    started_at: str
    command: str

    def describe(self) -> str:
        return f"user {self.user}, pid {self.pid} on {self.host}, since {self.started_at}: {self.command}"


class DeviceBusy(AoeRunnerError):
    """Another run holds the device."""

    exit_code = ExitCode.FINDING

    def __init__(self, device: int, holder: LockHolder | None) -> None:
        who = holder.describe() if holder else "a run that has not written its name yet"
        super().__init__(f"device {device} is being tuned by another run ({who})")
        self.device = device
        self.holder = holder


def lock_dir() -> Path:
    return Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "aoe-runner-locks")


def lock_path(device: int, directory: Path | None = None) -> Path:
    return (directory or lock_dir()) / f"device-{device}.lock"


class DeviceLock:
    """Hold the lock of one device: `with DeviceLock(0).acquire(holder): ...`."""

    def __init__(self, device: int, directory: Path | None = None) -> None:
        self.device = device
        self.path = lock_path(device, directory)
        self._fd: int | None = None

    def acquire(self, holder: LockHolder) -> DeviceLock:
        """Take the lock or raise DeviceBusy naming the holder; never waits."""
        _ensure_shared_directory(self.path.parent)
        fd = os.open(self.path, _OPEN_FLAGS, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DeviceBusy(self.device, current_holder(self.device, self.path.parent)) from None
        _make_shareable(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.model_dump_json().encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> DeviceLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def current_holder(device: int, directory: Path | None = None) -> LockHolder | None:
    """Who holds the device now; None when nobody does (a dead holder's lock is already gone)."""
    path = lock_path(device, directory)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd) or LockHolder(user="?", pid=0, host="?", started_at="?", command="?")
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_holder(fd: int) -> LockHolder | None:
    try:
        return LockHolder.model_validate(json.loads(os.pread(fd, 65536, 0) or b"null"))
    except (ValidationError, ValueError):
        return None


def _ensure_shared_directory(directory: Path) -> None:
    """Create the lock directory sticky and world-writable, like /tmp; refuse a symlink in its place."""
    try:
        directory.mkdir(mode=0o1777, parents=True)
        os.chmod(directory, 0o1777)  # mkdir's mode passes through the umask
    except FileExistsError:
        pass
    if stat.S_ISLNK(os.lstat(directory).st_mode):
        raise InputError(str(directory), "the lock directory is a symlink; refusing to use it")


def _make_shareable(fd: int) -> None:
    """Let other users take the lock later: the file outlives this run."""
    try:
        os.fchmod(fd, 0o666)
    except PermissionError:  # created by another user, who made it shareable already
        pass
