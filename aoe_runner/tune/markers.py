"""Spot the AOE log lines that show tuning switched on or finished (AOE.md §1) in a stream of output."""

from __future__ import annotations

from datetime import datetime, timezone

from aoe_runner.runs.manifest import MarkerSeen

MARKERS: tuple[tuple[str, bytes], ...] = (
    ("tuning_on", b"in tune mode, training graph handled by tools"),
    ("tuning_on", b"Aoe tuning graph"),
    ("operator_finished", b"Tuning process finished."),
    ("operator_finished", b"Single operator tuning process finished."),
    ("tuning_finished", b"Aoe process finished"),
    ("tuning_finished", b"Performance improved by"),
)
# Each marker holds one of these: output without any of them holds no marker. Four scans instead of six counts, and
# long words, which the search skips through faster (short words such as b"graph" cost more than the six counts).
HINTS = (b"in tune mode, training graph handled by tools", b"Aoe tuning graph", b" process finished", b"Performance improved by")
_OVERLAP = max(len(pattern) for _, pattern in MARKERS) - 1  # the most of a marker that can end a chunk
_CONTEXT = 1024  # bytes kept from the previous chunk: enough for a boundary and for the line around a marker
_LINE_LIMIT = 300


class MarkerScanner:
    """Feed it output chunks as they come; a marker split across two chunks is still seen once."""

    def __init__(self) -> None:
        self._tail = b""
        self._seen: dict[str, MarkerSeen] = {}
        self._unfinished: dict[str, bytes] = {}  # a marker's first line, while its end has not arrived yet
        self.new: list[MarkerSeen] = []  # markers whose first line is complete, since the caller last emptied this

    def feed(self, chunk: bytes) -> None:
        if self._unfinished:
            self._finish_lines(chunk)
        boundary = self._tail[-_OVERLAP:] + chunk[:_OVERLAP]
        if not any(hint in chunk or hint in boundary for hint in HINTS):  # most output: no counting
            self._tail = (self._tail + chunk[-_CONTEXT:])[-_CONTEXT:]
            return
        found = []
        for kind, pattern in MARKERS:
            overlap = len(pattern) - 1
            before = self._tail[-overlap:]
            boundary = before + chunk[:overlap]
            across = boundary.count(pattern)  # only matches that span the boundary fit here
            count = chunk.count(pattern) + across
            if count:
                first = boundary.find(pattern) - len(before) if across else chunk.find(pattern)  # from the chunk's start
                found.append((first, kind, pattern, count))
        for _, kind, pattern, count in sorted(found, key=lambda hit: hit[0]):  # in the order the output has them
            self._record(kind, pattern, count, chunk)
        self._tail = (self._tail + chunk[-_CONTEXT:])[-_CONTEXT:]

    @property
    def seen(self) -> list[MarkerSeen]:
        return list(self._seen.values())

    def _record(self, kind: str, pattern: bytes, count: int, chunk: bytes) -> None:
        marker = self._seen.get(kind)
        if marker is not None:
            marker.count += count
            return
        line, complete = _line_around(self._tail + chunk, pattern)
        marker = MarkerSeen(kind=kind, first_line=_text(line), first_seen_at=datetime.now(timezone.utc), count=count)
        self._seen[kind] = marker
        if complete:
            self.new.append(marker)
        else:
            self._unfinished[kind] = line

    def _finish_lines(self, chunk: bytes) -> None:
        end = chunk.find(b"\n")
        for kind, start in list(self._unfinished.items()):
            line = start + (chunk if end < 0 else chunk[:end])
            self._seen[kind].first_line = _text(line)
            if end >= 0 or len(line) > _LINE_LIMIT:
                del self._unfinished[kind]
                self.new.append(self._seen[kind])
            else:
                self._unfinished[kind] = line


def _line_around(window: bytes, pattern: bytes) -> tuple[bytes, bool]:
    """The line holding the pattern's first occurrence, and whether its end has arrived."""
    at = window.find(pattern)
    start = window.rfind(b"\n", 0, at) + 1
    end = window.find(b"\n", at)
    return window[start : end if end >= 0 else len(window)], end >= 0


def _text(line: bytes) -> str:
    return line.decode(errors="replace").strip()[:_LINE_LIMIT]
