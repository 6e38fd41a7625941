"""What the cache records of a file it read: its identity (device, inode, size, mtime, ctime) and, when identity
alone cannot be trusted (a small file, or one changed within RACY_NS of being read), a hash of its content."""

from __future__ import annotations

import os
import time
from typing import Any

from aoe_runner.common.regular_files import read_with_status
from aoe_runner.errors import InputError

try:  # hashlib's blake2b itself, without hashlib loading OpenSSL for it
    from _blake2 import blake2b
except ImportError:  # a Python built without it
    from hashlib import blake2b


RACY_NS = 2_000_000_000  # a file whose mtime or ctime is this close to the moment it was read is checked by content


HASHED_SIZE = 1 << 20  # files up to this size always keep a content hash: it costs nothing to check


Identity = tuple[int, int, int, int, int]  # device, inode, size, mtime_ns, ctime_ns


def identity(info: os.stat_result) -> Identity:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def content_hash(data: bytes) -> bytes:
    return blake2b(data, digest_size=16).digest()


class Stamp:
    """What a cache entry records of its file: identity, and a content hash when identity alone cannot be trusted."""

    __slots__ = ("path", "identity", "digest")

    def __init__(self, path: str, identity: Identity, digest: bytes | None) -> None:
        self.path, self.identity, self.digest = path, identity, digest

    @classmethod
    def of_read(cls, path: str, info: os.stat_result, data: bytes) -> Stamp:
        """The stamp of bytes just read from `path` (its status `info` taken as it was opened)."""
        racy = time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) < RACY_NS
        digest = content_hash(data) if racy or info.st_size <= HASHED_SIZE else None
        return cls(path, identity(info), digest)

    def to_wire(self) -> list[Any]:
        return [self.path, list(self.identity), self.digest]

    @classmethod
    def from_wire(cls, wire: list[Any]) -> Stamp:
        """Raises ValueError for anything but what to_wire writes."""
        try:
            path, ident, digest = wire
        except (TypeError, ValueError):
            raise ValueError("not a stamp") from None
        if (
            type(path) is not str
            or type(ident) is not list
            or len(ident) != 5
            or any(type(number) is not int for number in ident)
            or not (digest is None or type(digest) is bytes)
        ):
            raise ValueError("not a stamp")
        return cls(path, tuple(ident), digest)

    def holds(self, path: str, info: os.stat_result) -> bool:
        """Does the file at `path`, now with status `info`, still hold what was read?"""
        if path != self.path or identity(info) != self.identity:
            return False
        return self.digest is None or _hash_of_file(path, self.identity) == self.digest


def _hash_of_file(path: str, expected: Identity) -> bytes | None:
    """The content hash of the file at `path` while it is still the regular file `expected` (None if not: a FIFO
    or device put in its place since its status was taken is never read)."""
    try:
        data, info = read_with_status(path)
    except InputError:
        return None
    return content_hash(data) if identity(info) == expected else None
