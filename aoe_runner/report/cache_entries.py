"""The cache's entry files: written whole or not at all, read back only when their checksum holds.

A file's entry is a line of its CRC32, then the msgpack entry; a set's state is a line naming the set it adds to
(or WHOLE) with a checksum of the set's name, that line and the body, then the BankState bytes. Anything that
cannot be read, decoded or checked is None: a miss, never an error.
"""

from __future__ import annotations

import contextlib
import os
import re
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from aoe_runner.common.regular_files import read_with_status
from aoe_runner.errors import InputError

WHOLE = b"-"  # the first line of a set's state that adds to no other set


ENCODER = msgspec.msgpack.Encoder()


DECODER = msgspec.msgpack.Decoder()


UNWRITABLE = (UnicodeEncodeError, TypeError, OverflowError, ValueError)


WRITING = ".write-"  # an entry being written, renamed into place when whole


SET_NAME = re.compile(rb"[0-9a-f]{32}")


_CHECKSUM = re.compile(rb"[0-9a-f]{8}")  # a CRC32 as checked and joined_state write it


def bytes_of(path: Path, size: int = -1) -> bytes | None:
    """A regular file's bytes (its first `size` when given), or None: a FIFO is never read."""
    try:
        return read_with_status(os.fspath(path), size)[0]
    except InputError:
        return None


def read_entry(path: Path) -> Any:
    """An entry's content (a set's state as bytes), or None."""
    data = bytes_of(path)
    if data is None or path.suffix == ".state":
        return data
    return decoded(data)


def decoded(data: bytes) -> Any:
    try:
        return DECODER.decode(data)
    except (ValueError, RecursionError):  # msgspec.DecodeError, and UnicodeDecodeError for a damaged string
        return None


def checked(entry: list[Any]) -> bytes:
    """A file's entry as written: a line of its checksum, then the entry (a damaged one is a miss, never served)."""
    body = ENCODER.encode(entry)
    return b"%08x\n" % zlib.crc32(body) + body


def read_checked(path: Path) -> Any:
    """What checked wrote at `path`, or None when it is missing, damaged or not an entry."""
    head, _, body = (bytes_of(path) or b"").partition(b"\n")
    if not _CHECKSUM.fullmatch(head) or int(head, 16) != zlib.crc32(body):
        return None
    return decoded(body)


def first_line(path: Path) -> bytes:
    """The first line of a regular file, at most 80 bytes (empty when there is none: a FIFO is never read)."""
    return (bytes_of(path, 80) or b"").partition(b"\n")[0]


def joined_state(name: str, head: bytes, body: bytes) -> bytes:
    """A set's state file: a line of the set it adds to (or WHOLE) and a checksum, then its BankState bytes."""
    return b"".join((head, b" %08x\n" % _state_checksum(name, head, body), body))


def _state_checksum(name: str, head: bytes, body: bytes | memoryview) -> int:
    """A set's name, the head of its state file and its state body, checksummed together (a misplaced file fails)."""
    return zlib.crc32(body, zlib.crc32(head, zlib.crc32(name.encode("ascii"))))


def split_state(name: str, data: bytes) -> tuple[str | None, memoryview] | None:
    """The set that the state file of set `name` adds to (None: none) and its BankState bytes (not copied); None
    when the file is not whole, or not this set's."""
    end = data.find(b"\n", 0, 80)
    head, _, written = data[: max(end, 0)].partition(b" ")
    if end < 0 or not (head == WHOLE or SET_NAME.fullmatch(head)) or not _CHECKSUM.fullmatch(written):
        return None
    body = memoryview(data)[end + 1 :]
    if _state_checksum(name, head, body) != int(written, 16):
        return None
    return (None if head == WHOLE else head.decode("ascii")), body


def write_entry(path: Path, make_entry: Callable[[], Any]) -> int:
    """Write an entry (made only now: it may hold what msgpack cannot write, such as a lone surrogate); 0 if not."""
    try:
        entry = make_entry()
        data = entry if isinstance(entry, bytes) else ENCODER.encode(entry)
    except UNWRITABLE:
        return 0
    import tempfile  # here: a report its cache answers writes nothing, and starts without it

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=WRITING)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError:
        return 0
    return len(data)


def touch(*paths: Path) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            os.utime(path)


def remove(*paths: Path) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()
