"""The files of the local history beside the run records: manifests read safely, the removal lock and journal,
the room kept for the end of a run, and the words for what went wrong with them."""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from aoe_runner.common.jsontext import first_problem

if TYPE_CHECKING:
    from aoe_runner.runs.manifest import RunManifest

RESERVE_NAME = ".reserve"


RESERVE_BYTES = (256 << 10, 64 << 20)  # the room kept for the end of a run: at least, at most


NO_ROOM = (errno.ENOSPC, errno.EDQUOT)


MAX_MANIFEST_BYTES = 64 << 20  # a manifest is kilobytes: a bigger file is read only this far (and then is not one)


REMOVAL_LOCK = "prune.lock"  # held by a removal (runs prune, runs rm) from start to end


REMOVAL_JOURNAL = "prune.journal"  # the runs a removal takes out: there until it is done


def manifest_bytes(path: Path) -> bytes:
    """A manifest's bytes; InputError for anything but a regular file (a FIFO would hang every listing, a link to
    /dev/zero fill the memory)."""
    from aoe_runner.common.regular_files import read_with_status

    return read_with_status(str(path), MAX_MANIFEST_BYTES)[0]


@contextmanager
def no_removal_under_way(home: Path) -> Iterator[bool]:
    """REMOVAL_LOCK held shared, without waiting: True while it is held (a removal waits for it), False when a
    removal holds it or it cannot be taken (a read-only home)."""
    try:
        fd = os.open(home / REMOVAL_LOCK, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError:
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        yield False
        return
    try:
        yield True
    finally:
        os.close(fd)


def reserve_room(path: Path, size: int) -> None:
    """Allocate real blocks (not a sparse file) that can be given back when the disk is full.

    Where the filesystem cannot fallocate (some NFS and ZFS setups), zeros are written instead; only a disk with no
    room raises, since then the run could not be recorded anyway.
    """
    low, high = RESERVE_BYTES
    wanted = min(max(size, low), high)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        try:
            os.posix_fallocate(fd, 0, wanted)
        except OSError as error:
            if error.errno in NO_ROOM:
                raise
            os.write(fd, bytes(wanted))
    finally:
        os.close(fd)


def compact(manifest: RunManifest) -> RunManifest:
    """The outcome without the bulky bank inventories, for a disk with no room left."""
    return replace(manifest, bank_before=replace(manifest.bank_before, files=[]), bank_after=None)


def reason_of(error: BaseException) -> str:
    """An OSError's own words (No space left on device), else the error's message (a database's)."""
    return error.strerror if isinstance(error, OSError) and error.strerror else str(error)


def manifest_problem(error: ValueError) -> str:
    """A manifest's first problem, where it is (`bank_after.stored_bytes: ...`) when pydantic says."""
    from pydantic import ValidationError

    if not isinstance(error, ValidationError):
        return str(error)
    where, why = first_problem(error)
    return f"{where}: {why}" if where else why
