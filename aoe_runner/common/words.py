"""Counts and sizes in words: '1 report', '3 entries', '1.5 GiB'."""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {plural or noun + 's'}"


GIB = 2**30


def size_text(n: float) -> str:
    """Bytes in the largest binary unit that keeps the figure at least 1 (GiB for anything from 1 GiB up)."""
    for unit, factor in (("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n:.0f} bytes"
