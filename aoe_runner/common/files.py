"""Writes that a crash or Ctrl-C cannot leave half-done: write a temporary file, then rename it.

Files are created as any Unix tool creates them, mode 0666 minus the umask (`umask 077` keeps run records and
outputs private); a file replaced keeps its permissions (and, where this user may give it, its owner and group),
as `>` would; the temporary file only starts private, so nobody reads it half-written.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from aoe_runner.common.terminal import Pieces, Terminal
from aoe_runner.errors import InputError

STDOUT = "-"


def atomic_write_text(path: str | os.PathLike[str], text: str | bytes | Pieces) -> None:
    """Replace path with text (UTF-8 bytes, or pieces of them, as they are) in one step; the old content survives any
    failure before the rename."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    target = Path(path)
    try:
        replaced: os.stat_result | None = os.stat(target)
    except OSError:
        replaced = None
    with _termination_interrupts():
        _write_then_rename(target, data, replaced)


def _write_then_rename(target: Path, data: bytes | Pieces, replaced: os.stat_result | None) -> None:
    import tempfile  # here: a command that writes nothing (a report from its cache) starts without it

    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, list):
                handle.writelines(data)
            else:
                handle.write(data)
            handle.flush()
            _take_place_of(handle.fileno(), replaced)
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def _termination_interrupts() -> Iterator[None]:
    """While a file is written, SIGTERM and SIGHUP interrupt as Ctrl-C does (KeyboardInterrupt: the temporary file
    is removed, exit 130) instead of killing the process at once, which left the temporary file behind. Only where
    they still do what they do by default: a tuning run counts them itself."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = [number for number in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(number) is signal.SIG_DFL]
    for number in taken:
        signal.signal(number, _interrupt)
    try:
        yield
    finally:
        for number in taken:
            signal.signal(number, signal.SIG_DFL)


def _interrupt(number: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(number).name)


def _take_place_of(fd: int, replaced: os.stat_result | None) -> None:
    """Give a new file the permissions of the regular file it replaces (set-id bits aside), or else 0666 minus the
    umask; and the replaced file's owner and group as far as this user may."""
    if replaced is None or not stat.S_ISREG(replaced.st_mode):
        os.fchmod(fd, 0o666 & ~process_umask())
        return
    if (replaced.st_uid, replaced.st_gid) != (os.geteuid(), os.getegid()):
        for owner in ((replaced.st_uid, replaced.st_gid), (-1, replaced.st_gid)):
            try:
                os.fchown(fd, *owner)
                break
            except OSError:
                continue
    os.fchmod(fd, stat.S_IMODE(replaced.st_mode) & 0o777)


def write_output(path: str | os.PathLike[str], text: str | bytes | Pieces) -> None:
    """atomic_write_text for a path the user named (`-` is stdout); a failure is one InputError naming the path.

    A symbolic link stays and its target is replaced; a path to this process's stdout (/dev/stdout, say) is
    written as stdout."""
    where = os.fspath(path)
    if where == STDOUT or _is_stdout(where):
        Terminal().result(text)
        return
    where = output_place(where, " (use -o - for stdout)")
    try:
        atomic_write_text(where, text)
    except OSError as error:
        directory = os.path.dirname(os.path.abspath(where))
        raise InputError(
            where, f"cannot write: {error.strerror or error} (a new file in {directory} could not be made)"
        ) from None


def output_place(where: str, instead: str = "") -> str:
    """The file to write for a path the user named: a symbolic link's target (the link stays); InputError for an
    empty path, a directory, and anything but a regular file (a device, FIFO or socket is never replaced), each
    message ending with `instead`, what the user may name instead."""
    if not where.strip():
        raise InputError(repr(where), f"an empty path names no file{instead}")
    if where.endswith(os.sep):
        raise InputError(where, f"cannot write: a path that ends in / names a directory{instead}")
    if os.path.islink(where):
        where = os.path.realpath(where)
    _refuse_non_regular(where, instead)
    return where


def _is_stdout(where: str) -> bool:
    try:
        return os.path.samestat(os.stat(where), os.fstat(1))
    except OSError:  # no such file, or no stdout
        return False


def _refuse_non_regular(where: str, instead: str) -> None:
    try:
        info = os.stat(where)
    except OSError:
        return  # a new file: its directory decides
    if stat.S_ISDIR(info.st_mode):
        raise InputError(where, f"cannot write: it is a directory{instead}")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(where, "cannot write: it is not a regular file (a device, FIFO or socket is never replaced)")
    if Path(where).resolve().is_relative_to("/proc") or Path(where).resolve().is_relative_to("/sys"):
        raise InputError(where, "cannot write: files of /proc and /sys are the kernel's, not outputs")


def process_umask() -> int:
    """This process's umask, read without changing it (Linux), else by the set-and-restore dance."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def flock_telling(fd: int, operation: int, on_wait: Callable[[], None] | None) -> None:
    """fcntl.flock(fd, operation), first calling on_wait (to say what is waited for) when it would have to wait."""
    import fcntl

    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        if on_wait is not None:
            on_wait()
    fcntl.flock(fd, operation)


def tree_bytes(path: Path) -> int:
    """What the files under `path` take (each entry's own size: symbolic links are not followed); 0 when it is not
    there, and a file that vanishes meanwhile counts nothing."""
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                continue
    return total


SPARSE_CHUNK = 1 << 20


def copy_keeping_holes(source: Path, target: Path) -> None:
    """Copy a file as `cp --sparse=always` does: a run of zero bytes becomes a hole, not disk, so a sparse file (a
    result file truncated far past its end, say) costs what its data costs. Its times and mode are copied too."""
    with open(source, "rb") as reading, open(target, "wb") as writing:
        while chunk := reading.read(SPARSE_CHUNK):
            if chunk.count(0) == len(chunk):
                writing.seek(len(chunk), os.SEEK_CUR)
            else:
                writing.write(chunk)
        writing.truncate()
    shutil.copystat(source, target)
