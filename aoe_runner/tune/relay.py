"""Write to a terminal or pipe without ever blocking the supervisor.

A reader that stops reading (Ctrl-S, a stuck `tee`, a dropped ssh session, a pager) fills the pipe,
and a plain write then blocks until it reads again: timers and signals would wait with it. A
`TerminalWriter` hands each chunk to a thread of its own, which does the blocking write. When more
than `limit` bytes wait, new chunks are dropped and counted, so memory stays bounded and the caller
never waits; the log file, written directly, still gets every byte. A regular file never stops reading: there,
a full queue makes the caller wait for the disk (up to FILE_STALL_S) rather than drop.

Our own messages (notices, the status line) go in only where the script's output is at a line break: one that
comes while the script has begun a line and not ended it waits, up to HOLD_S, for the line to end.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import threading
import time
from collections import deque
from types import TracebackType
from typing import BinaryIO, TextIO, cast

DEFAULT_LIMIT = 4 << 20
WRITE_PIECE = 1 << 16  # a blocking write returns only when all of it is in: pieces let a close count what was shown
DRAIN_AT_EXIT_S = 2.0  # at the end, how long a slow reader gets to take what is still queued
HOLD_S = 1.0  # how long our message waits for the script to end a line it has begun (a progress bar never does)
FILE_STALL_S = 5.0  # a regular file takes every byte; one that takes none for this long is stalled (a hung mount)


class TerminalWriter:
    """A non-blocking front for one file descriptor we do not own (our stdout or stderr)."""

    def __init__(self, fd: int, name: str, limit: int = DEFAULT_LIMIT) -> None:
        self.fd = fd
        self.name = name
        self.limit = limit
        self.dropped_bytes = 0
        self.error: str | None = None
        self._chunks: deque[bytes] = deque()
        self._waiting = 0
        self._closed = False
        self._line_open = False  # the script's last byte here was not a line break
        self._held: list[bytes] = []  # our messages, waiting for that line to end
        self._held_since = 0.0
        self._condition = threading.Condition()
        try:  # a regular file never stops reading: its writes are waited for, not dropped (see _accepts)
            self._file = stat.S_ISREG(os.fstat(fd).st_mode)
        except OSError:
            self._file = False
        self._thread = threading.Thread(target=self._drain, name=f"aoe-runner {name} writer", daemon=True)
        self._thread.start()

    def write(self, data: bytes) -> bool:
        """Queue the script's output; False when it was dropped (the reader is too far behind, or the fd failed)."""
        if not data:
            return True
        with self._condition:
            if not self._accepts(len(data)):
                return False
            if self._held and b"\n" in data:  # the line our messages wait for ends here: they go right after it
                end = data.index(b"\n") + 1
                self._queue(data[:end])
                self._release_held(b"")
                data = data[end:]
            self._queue(data)
            if data:
                self._line_open = not data.endswith(b"\n")
        return True

    def say(self, data: bytes) -> bool:
        """Queue one of our own messages, at a line break of the script's output (see HOLD_S)."""
        if not data:
            return True
        with self._condition:
            if not self._accepts(len(data)):
                return False
            if self._line_open:
                if not self._held:
                    self._held_since = time.monotonic()
                self._held.append(data)
                self._condition.notify()  # the drain thread keeps the time
            else:
                self._queue(data)
        return True

    def _accepts(self, size: int) -> bool:
        if self._file:  # the queue is full only because the disk is a moment behind: wait for it
            deadline = time.monotonic() + FILE_STALL_S
            while self._waiting + size > self.limit and self.error is None and not self._closed:
                if (left := deadline - time.monotonic()) <= 0:
                    break
                self._condition.wait(min(left, 0.05))
        if self.error is not None or self._closed or self._waiting + size > self.limit:
            self.dropped_bytes += size
            return False
        return True

    def _queue(self, data: bytes) -> None:
        if data:
            self._chunks.append(data)
            self._waiting += len(data)
            self._condition.notify()

    def _release_held(self, before: bytes) -> None:
        """Queue our held messages (after `before`: a line break, when the script's line is left open)."""
        if self._held:
            self._queue(before + b"".join(self._held))
            self._held.clear()
            self._line_open = False

    def close(self, wait_s: float) -> None:
        """Let the thread write what waits for up to wait_s; what is still waiting then counts as dropped."""
        self.stop_accepting()
        self._thread.join(wait_s)
        with self._condition:
            self.dropped_bytes += self._waiting
            self._chunks.clear()
            self._waiting = 0

    def stop_accepting(self) -> None:
        with self._condition:
            self._release_held(b"\n")
            self._closed = True
            self._condition.notify()

    def problem(self) -> str | None:
        """One line for the user about what the reader did not get, if anything."""
        if self.error is not None:
            return f"stopped writing to {self.name}: {self.error}; the log has all of the script's output"
        if self.dropped_bytes:
            return (
                f"{self.name} was not being read: {self.dropped_bytes} bytes of output were not shown there; "
                "the log has all of the script's output"
            )
        return None

    def text_stream(self) -> io.TextIOWrapper:
        """A text stream over this writer, for messages that must not block either (status lines, notices)."""
        front = cast(BinaryIO, _RawFront(self))  # unbuffered: each write goes straight to the writer
        return io.TextIOWrapper(front, encoding="utf-8", errors="backslashreplace", line_buffering=True)

    def _drain(self) -> None:
        while True:
            with self._condition:
                while not self._chunks and not self._closed:
                    if not self._held:
                        self._condition.wait()
                    elif (left := self._held_since + HOLD_S - time.monotonic()) > 0:
                        self._condition.wait(left)
                    else:
                        self._release_held(b"\n")  # the line has stayed open too long: ours go on a line of their own
                if not self._chunks:
                    return
                chunk = self._chunks[0]
            view = memoryview(chunk)
            while view:
                try:
                    written = os.write(self.fd, view[:WRITE_PIECE])
                except OSError as error:
                    with self._condition:
                        self.error = error.strerror or str(error)
                        self.dropped_bytes += self._waiting
                        self._chunks.clear()
                        self._waiting = 0
                    return
                view = view[written:]
                with self._condition:
                    if not (self._chunks and self._chunks[0] is chunk):
                        return  # closed meanwhile: what was not written is counted as dropped
                    self._waiting -= written  # so that a close now counts only what was not written
                    self._condition.notify_all()  # a writer waiting for room (a regular file's)
            with self._condition:
                if self._chunks and self._chunks[0] is chunk:
                    self._chunks.popleft()


class TerminalOutput:
    """Our stdout and stderr for the length of one command: the script's output and our own messages go
    through TerminalWriters, so no reader, however slow, can block the run. On exit, a slow reader gets
    DRAIN_AT_EXIT_S to catch up; what it did not get is said in one line per stream."""

    def __init__(self) -> None:
        self.out = TerminalWriter(1, "stdout")
        # one file behind both (2>&1, a terminal): one writer, so the two streams keep their order
        self.err = self.out if _same_file(1, 2) else TerminalWriter(2, "stderr")
        self._stream = self.err.text_stream()
        self._previous: TextIO = sys.stderr

    def __enter__(self) -> TerminalOutput:
        self._previous, sys.stderr = sys.stderr, self._stream
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._stream.flush()
        sys.stderr = self._previous
        writers = {id(writer): writer for writer in (self.out, self.err)}.values()
        for writer in writers:
            writer.stop_accepting()
        deadline = time.monotonic() + DRAIN_AT_EXIT_S
        for writer in writers:
            writer.close(max(0.0, deadline - time.monotonic()))
        if self.err.problem() is None and self.out.problem():  # said only where someone reads, never blocking long
            print(f"warning: {self.out.problem()}", file=sys.stderr, flush=True)

    def problems(self) -> list[str]:
        """What the readers have missed so far."""
        writers = [self.out] if self.err is self.out else [self.out, self.err]
        return [problem for problem in (writer.problem() for writer in writers) if problem]


class _RawFront(io.RawIOBase):
    def __init__(self, writer: TerminalWriter) -> None:
        self._writer = writer

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self._writer.say(bytes(data))
        return len(data)


def _same_file(first: int, second: int) -> bool:
    try:
        one, other = os.fstat(first), os.fstat(second)
    except OSError:
        return False
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)
