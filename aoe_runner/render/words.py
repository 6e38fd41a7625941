"""Counts in words that agree with their nouns: '1 report', '2 reports', '1 entry', '3 entries'."""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {plural or noun + 's'}"
