"""Writes that a crash or Ctrl-C cannot leave half-done: write a temporary file, then rename it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from aoe_runner.errors import InputError


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace path with text in one step; the old content survives any failure before the rename."""
    target = Path(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_output(path: str | os.PathLike[str], text: str) -> None:
    """atomic_write_text for a path the user named: a failure is an InputError naming the path."""
    try:
        atomic_write_text(path, text)
    except OSError as error:
        raise InputError(os.fspath(path), f"cannot write: {error.strerror or error}") from None
