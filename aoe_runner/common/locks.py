"""Locks shared by every user of the host: taken at once or refused naming the holder, dropped when the holder dies.

They live in one directory, `/tmp/aoe-runner-locks` unless `AOE_RUNNER_LOCK_DIR` says otherwise, which other local
users can write to. The design follows what trusted tools do with such a directory:

- The directory is trusted only when it, and every directory and symlink on its path, is owned by root or by the
  current user, and no directory on it is writable by others unless it is sticky (OpenSSH's `safe_path`; X11 wants
  `/tmp/.X11-unix` root-owned and sticky). The owner of a directory may remove any file in it, so a lock directory
  owned by another user is refused, with the fix: `install -d -m 1777 -o root DIR` once (or a tmpfiles.d line).
- Each user holds a lock in a file of their own, `NAME.uid-UID.lock`. In a sticky directory only a file's owner, the
  directory's owner and root can remove or replace it, so no other user can delete a lock that is held, and nobody
  ever opens another user's file for writing, or with O_CREAT (which `fs.protected_regular` refuses in sticky
  directories): one's own file is opened without O_CREAT first, and created with O_CREAT|O_EXCL only when missing.
- Every open uses O_NOFOLLOW|O_NONBLOCK and is checked with fstat: a symlink, FIFO, directory or another user's file
  in one's own place never redirects or hangs a run; it is refused in one line that says who can remove it.
- Taking the lock: an open-file-description (OFD) write lock on one's own file, then a check that the name still
  refers to the locked file, then F_OFD_GETLK on every other user's file of the same name. GETLK only tests, so a
  check never makes another run see a busy lock. Two runs that lock their own files at the same moment both see the
  other; a run whose holder has not written its name yet is retried after a random pause of a few milliseconds, so
  one of the two wins. Only then is the holder's name written into the file, for the message of whoever is refused.
- The kernel drops an OFD lock when the last descriptor of it closes, so a crashed run blocks nobody; a run passes
  the descriptor to its processes (`inherited_fds`), so whatever a killed aoe-runner left running keeps the lock.
  The file's content is only a name: it decides nothing. The user shown for a holder is the file's owner; the
  pid, host, time and command shown are what the file says.

The `struct flock` layout used here is that of 64-bit Linux (x86_64, aarch64), where AOE runs.
"""

from __future__ import annotations

import errno
import fcntl
import os
import platform
import re
import stat
import struct
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

from aoe_runner.common.lock_directory import LockUnusable, lock_dir, trusted_directory, user_name
from aoe_runner.common.plain_data import FIELD_DOCSTRINGS
from aoe_runner.common.regular_files import mode_kind
from aoe_runner.errors import AoeRunnerError, ExitCode

_OPEN = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_FLOCK = "hhqqi4x"  # struct flock on 64-bit Linux: type, whence, start, len, pid
_READ, _WRITE = fcntl.F_RDLCK, fcntl.F_WRLCK
_COMMAND_LIMIT = 4000  # characters of a holder's command kept: at most 12 bytes each, escaped, within 64 KiB
_ATTEMPTS = 40  # rounds against a run that is itself still checking; about half a second in all
_Lock = TypeVar("_Lock", bound="SharedLock")


@dataclass(kw_only=True)
class LockHolder:
    __pydantic_config__ = FIELD_DOCSTRINGS

    user: str
    pid: int
    host: str
    started_at: str
    command: str

    def describe(self) -> str:
        return f"user {self.user}, pid {self.pid} on {self.host}, since {self.started_at}: {self.command}"

    def to_json(self) -> bytes:
        """ASCII JSON (a name's lone surrogate is escaped), the command cut to fit what a reader reads (64 KiB)."""
        import json  # here, as in from_json: checking a lock that nobody holds reads no JSON

        fields = asdict(self)
        if len(self.command) > _COMMAND_LIMIT:
            fields["command"] = self.command[:_COMMAND_LIMIT] + "..."
        return json.dumps(fields, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes) -> LockHolder | None:
        """The holder a lock file names; None for anything else (the file may be another user's, or half-written)."""
        import json

        try:
            fields = json.loads(data)
        except (ValueError, RecursionError):  # RecursionError: `[` nested thousands deep
            return None
        if not isinstance(fields, dict) or type(fields.get("pid")) is not int:
            return None
        texts = {name: fields.get(name) for name in ("user", "host", "started_at", "command")}
        if not all(isinstance(text, str) for text in texts.values()):
            return None
        return cls(pid=fields["pid"], **texts)  # type: ignore[arg-type]

    @classmethod
    def here(cls, command: str) -> LockHolder:
        """This process, started now, doing command."""
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return cls(user=user_name(os.geteuid()), pid=os.getpid(), host=platform.node(), started_at=started, command=command)


def run_command(command: str, script: str, arguments: Sequence[str], label: str) -> str:
    """How a run names itself as a lock's holder: `aoe-runner tune SCRIPT ARGS... (run ID)`."""
    import shlex

    return f"aoe-runner {command} {shlex.join([script, *arguments])} ({label})"


class LockBusy(AoeRunnerError):
    """Another run holds the lock; holder is None when it has not written its name yet."""

    exit_code = ExitCode.FINDING

    def __init__(self, message: str, holder: LockHolder | None) -> None:
        super().__init__(message)
        self.holder = holder


class SharedLock:
    """One named lock for all users: `with SomeLock(...).acquire(holder): ...`; subclasses name what is busy."""

    def __init__(self, name: str, directory: Path | None = None) -> None:
        self.name = name
        self.directory = directory or lock_dir()
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        """This user's lock file."""
        return self.directory / self._file_name(os.geteuid())

    def busy(self, holder: LockHolder | None) -> LockBusy:
        who = holder.describe() if holder else "a run that has not written its name yet"
        return LockBusy(f"{self.name} is held by another run ({who})", holder)

    def acquire(self: _Lock, holder: LockHolder, shared: bool = False) -> _Lock:
        """Take the lock or raise busy() naming the holder; waits at most half a second, for a run still starting.

        shared: held beside other shared holders (tuning runs into one bank), never beside an exclusive one (a restore).
        """
        directory = trusted_directory(self.directory, create=True)
        try:
            for _ in range(_ATTEMPTS):
                fd, other = self._attempt(directory, _READ if shared else _WRITE)
                if fd is not None:
                    os.pwrite(fd, holder.to_json(), 0)
                    self._fd = fd
                    return self
                if other is not None:
                    raise self.busy(other)
                import random

                time.sleep(random.uniform(0.002, 0.02))
            raise self.busy(None)
        finally:
            os.close(directory)

    def holder(self, shared: bool = False) -> LockHolder | None:
        """Who would stop us taking the lock now (shared or not), without taking it; None when nobody.

        Raises LockUnusable as acquire would.
        """
        if not os.path.lexists(self.directory):
            return None
        directory = trusted_directory(self.directory, create=False)
        try:
            self._check_own_place(directory)
            held, holder = self._held_by_others(directory, _READ if shared else _WRITE, including_mine=True)
        finally:
            os.close(directory)
        if held and holder is None:
            return LockHolder(user="?", pid=0, host="?", started_at="?", command="a run that has not written its name yet")
        return holder

    def inherited_fds(self) -> tuple[int, ...]:
        """The descriptor to pass to a run's processes: the lock stays held while any of them lives."""
        return () if self._fd is None else (self._fd,)

    def release(self) -> None:
        """Close our descriptor: the lock is dropped once no process that inherited it holds it either.

        The name stays in the file: it names the run to whoever finds the lock still held by what that run left
        behind, and decides nothing once the lock is free.
        """
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self: _Lock) -> _Lock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def _file_name(self, uid: int) -> str:
        return f"{self.name}.uid-{uid}.lock"

    def _attempt(self, directory: int, kind: int) -> tuple[int | None, LockHolder | None]:
        """(our file, locked and emptied, None) or (None, whoever is in the way: None when they have no name yet)."""
        fd = self._open_own_file(directory)
        taken = False
        try:
            if not _try_lock(fd, kind):
                return None, _read_holder(fd)  # another run of this user
            if not _same_file(fd, self._file_name(os.geteuid()), directory):
                return None, None  # replaced between open and lock: lock the file that is there now
            os.ftruncate(fd, 0)  # a shared holder's name replaces another's: either names a holder
            held, other = self._held_by_others(directory, kind)
            taken = not held
            return (fd, None) if taken else (None, other)
        finally:
            if not taken:
                os.close(fd)

    def _open_own_file(self, directory: int) -> int:
        name = self._file_name(os.geteuid())
        while True:
            try:
                fd = os.open(name, _OPEN | os.O_RDWR, dir_fd=directory)
            except FileNotFoundError:
                try:
                    fd = os.open(name, _OPEN | os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=directory)
                except FileExistsError:
                    continue
                os.fchmod(fd, 0o644)  # others read the holder's name; the umask may say otherwise
            except OSError as error:
                raise self._not_a_lock(directory, name, error) from None
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid():
                return fd
            os.close(fd)
            raise self._not_a_lock(directory, name, None)

    def _check_own_place(self, directory: int) -> None:
        name = self._file_name(os.geteuid())
        try:
            info = os.stat(name, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not (stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid()):
            raise self._not_a_lock(directory, name, None)

    def _held_by_others(self, directory: int, kind: int, including_mine: bool = False) -> tuple[bool, LockHolder | None]:
        """Whether another user's file of this lock is held against a lock of `kind`, and by whom (None: no name yet)."""
        pattern = re.compile(re.escape(self.name) + r"\.uid-(\d+)\.lock")
        for entry in sorted(os.listdir(directory)):
            match = pattern.fullmatch(entry)
            if not match or (int(match.group(1)) == os.geteuid() and not including_mine):
                continue
            fd = self._open_peer(directory, entry, int(match.group(1)))
            if fd is None:
                continue
            try:
                if _is_locked(fd, kind):
                    return True, _read_holder(fd)
            finally:
                os.close(fd)
        return False, None

    def _open_peer(self, directory: int, name: str, uid: int) -> int | None:
        """Another user's lock file, read-only; None when the entry is not one (a run of theirs would refuse it too)."""
        try:
            fd = os.open(name, _OPEN | os.O_RDONLY, dir_fd=directory)
        except PermissionError as error:
            info = os.stat(name, dir_fd=directory, follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and info.st_uid == uid:
                where = self.directory / name
                reason = f"cannot read it ({error.strerror}), so cannot tell whether {user_name(uid)} holds it"
                raise LockUnusable(str(where), reason) from None
            return None
        except OSError:
            return None
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_uid == uid:
            return fd
        os.close(fd)
        return None

    def _not_a_lock(self, directory: int, name: str, error: OSError | None) -> LockUnusable:
        where = str(self.directory / name)
        try:
            info = os.stat(name, dir_fd=directory, follow_symlinks=False)
        except OSError:
            return LockUnusable(where, f"cannot open the lock file: {error.strerror if error else 'it vanished'}")
        owner = user_name(info.st_uid)
        who = "remove it" if info.st_uid == os.geteuid() else f"only {owner} or root can remove it"
        return LockUnusable(
            where, f"{mode_kind(info.st_mode)} owned by {owner}, not an aoe-runner lock; refusing to use it ({who})"
        )


def _try_lock(fd: int, kind: int) -> bool:
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack(_FLOCK, kind, os.SEEK_SET, 0, 0, 0))
    except OSError as error:
        if error.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _is_locked(fd: int, kind: int) -> bool:
    """Would a lock of `kind` conflict? (a read lock conflicts only with a write lock; a write lock with any)."""
    answer = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, struct.pack(_FLOCK, kind, os.SEEK_SET, 0, 0, 0))
    return struct.unpack(_FLOCK, answer)[0] != fcntl.F_UNLCK


def _same_file(fd: int, name: str, directory: int) -> bool:
    try:
        there = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino)


def _read_holder(fd: int) -> LockHolder | None:
    """The holder a lock file names, as the user who owns the file: the kernel vouches for that, while the pid, host,
    time and command are only what the file says (another user could write any name into a file of theirs)."""
    claimed = LockHolder.from_json(os.pread(fd, 65536, 0))
    return None if claimed is None else replace(claimed, user=user_name(os.fstat(fd).st_uid))
