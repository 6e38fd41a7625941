"""Reading a file only when it is a regular one (a FIFO would block the reader forever), and what is at a path.

Kept apart from results/, so that preflight and tune read their inputs the same way without loading it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from aoe_runner.errors import InputError


def read_regular_file(where: str) -> tuple[bytes, float]:
    """A result file's bytes and mtime (read_json_file: refused unread when it is anything but a regular file, or
    cannot be JSON)."""
    data, info = read_json_file(where)
    return data, info.st_mtime


def read_with_status(where: str, size: int = -1) -> tuple[bytes, os.stat_result]:
    """A file's bytes (its first `size` bytes when given) and its status as it was opened; InputError for anything
    but a regular file."""
    with _opened_regular(where) as (handle, info):
        return handle.read(size), info


@contextmanager
def _opened_regular(where: str) -> Iterator[tuple[BinaryIO, os.stat_result]]:
    """The file opened without waiting (a FIFO would block the reader forever) and its status; InputError for anything
    but a regular file, and for a failure to open or read it."""
    try:
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise InputError(where, "not a regular file (a FIFO, device or socket is never read)")
            yield handle, info
    except OSError as error:
        raise InputError(where, f"cannot read: {error.strerror or error}") from None


MAX_JSON_BYTES = 2**30  # a larger result file is refused unread: AOE writes megabytes (docs/reference.md: memory)
_JSON_STARTS = frozenset(b'{["-0123456789tfn')  # the first byte of any JSON value
_HEAD_BYTES = 4096
_MOST_WHITESPACE = 1 << 20  # before its first significant byte: AOE writes none


def read_json_file(where: str) -> tuple[bytes, os.stat_result]:
    """read_with_status for a JSON document, refused before it is read whole when it cannot be one: larger than
    MAX_JSON_BYTES, or starting with an ASCII byte no JSON value starts with (a zero-filled or sparse file, of any
    size). A first byte beyond ASCII (a UTF-16 byte order mark) is left to the decoder, which says what it is."""
    with _opened_regular(where) as (handle, info):
        if info.st_size > MAX_JSON_BYTES:
            size, most = f"{-(-info.st_size // 2**20):,} MiB", f"{MAX_JSON_BYTES >> 20:,} MiB"
            raise InputError(where, f"{size}, more than the {most} a result file may have: not read")
        first, read = b"", 0
        while not first and read < _MOST_WHITESPACE:  # past any whitespace to the first significant byte
            piece = handle.read(_HEAD_BYTES)
            if not piece:
                break
            first = (piece.removeprefix(b"\xef\xbb\xbf") if read == 0 else piece).lstrip(b" \t\r\n")[:1]
            read += len(piece)
        if not first and read >= _MOST_WHITESPACE:
            raise InputError(where, f"not an AOE result file: it starts with {_MOST_WHITESPACE >> 20} MiB of whitespace")
        if first and first[0] < 0x80 and first[0] not in _JSON_STARTS:  # others: the decoder names the encoding
            raise InputError(where, "not an AOE result file: it is not JSON (expected '{' or '[')")
        handle.seek(0)  # the whole file in one piece: no copy of it joined to its head
        return handle.read(), info


def path_kind(path: str | Path) -> str | None:
    """What is at `path`: "directory", "regular" (a file), "other" (a FIFO, device or socket), "unknown" (it cannot
    be looked at, e.g. inside a directory this user cannot search: reading it will say why), or None (nothing).
    Never raises, unlike pathlib's is_dir() and exists(), which raise PermissionError."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError, ValueError):  # ValueError: a NUL in the name
        return None
    except OSError:
        return "unknown"
    return "directory" if stat.S_ISDIR(mode) else "regular" if stat.S_ISREG(mode) else "other"


def mode_kind(mode: int) -> str:
    """What a file mode names, in words for a message: "a file", "a directory", "a symlink", "a FIFO", ..."""
    for test, name in (
        (stat.S_ISREG, "a file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a device file"
