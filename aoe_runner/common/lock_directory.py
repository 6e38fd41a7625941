"""The directory every user's locks live in, trusted only when no other user can remove or replace what is in it.

It, and every directory and symlink on its path, must be owned by root or the current user, and no directory on it
may be writable by others unless it is sticky (OpenSSH's `safe_path`); locks.py says why.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from aoe_runner.common.regular_files import mode_kind
from aoe_runner.errors import InputError

LOCK_DIR_ENV = "AOE_RUNNER_LOCK_DIR"


class LockUnusable(InputError):
    """The lock directory or a lock file cannot be trusted; nothing was locked."""


def lock_dir() -> Path:
    """LockUnusable for a relative AOE_RUNNER_LOCK_DIR: it would be another directory in each working directory, and
    two runs started in two of them would hold one device at once."""
    configured = os.environ.get(LOCK_DIR_ENV)
    if configured:
        if not os.path.isabs(configured):
            raise LockUnusable(
                f"{LOCK_DIR_ENV}={configured!r}", "not an absolute path: each working directory would have its own locks"
            )
        return Path(configured)
    import tempfile  # here: only the default place needs it

    return Path(tempfile.gettempdir()) / "aoe-runner-locks"


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def trusted_directory(directory: Path, create: bool) -> int:
    """An fd of the lock directory, after checking that no other user can remove or replace what is in it."""
    path = Path(os.path.abspath(directory))
    if create:
        _create_shared(path)
    for step in [*reversed(path.parents), path]:
        _check_trusted(step)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise LockUnusable(str(path), f"cannot open the lock directory: {error.strerror}") from None
    try:
        _check_mode(path, os.fstat(fd))  # the directory itself, wherever a trusted symlink led
    except BaseException:
        os.close(fd)
        raise
    return fd


def _create_shared(path: Path) -> None:
    """Create the lock directory sticky and world-writable, like /tmp; leave an existing one as it is."""
    try:
        path.mkdir(mode=0o1777, parents=True)
    except FileExistsError:
        return
    except OSError as error:
        raise LockUnusable(str(path), f"cannot create the lock directory: {error.strerror}") from None
    os.chmod(path, 0o1777)  # mkdir's mode passes through the umask


def _check_trusted(step: Path) -> None:
    try:
        info = os.lstat(step)
    except OSError as error:
        raise LockUnusable(str(step), f"cannot check the lock directory: {error.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        _check_owner(step, info)
    else:
        _check_mode(step, info)


def _check_mode(step: Path, info: os.stat_result) -> None:
    if not stat.S_ISDIR(info.st_mode):
        raise LockUnusable(str(step), f"{mode_kind(info.st_mode)} where the lock directory should be; set {LOCK_DIR_ENV}")
    _check_owner(step, info)
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise LockUnusable(
            str(step), f"writable by other users but not sticky, so anyone could replace a lock; run 'chmod +t {step}'"
        )


def _check_owner(step: Path, info: os.stat_result) -> None:
    if info.st_uid not in (0, os.geteuid()):
        raise LockUnusable(
            str(step),
            f"owned by {user_name(info.st_uid)}, who could remove other users' locks; "
            f"ask root to run 'install -d -m 1777 -o root {step}', or set {LOCK_DIR_ENV}",
        )
