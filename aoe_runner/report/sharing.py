"""Files shared out among this process and forked workers, safe when a worker dies.

Every process takes the next file not yet taken until none is left, so that all finish together whatever the
files' sizes and the other load on each CPU. The workers are forked, and inherit the counter: a small nameless
file in memory (memfd) under a POSIX record lock, which the kernel releases when its holder dies, in which each
file records the process that took it. A worker that dies (SIGKILL, the OOM killer) before its result is in
loses that result, and its files are done again here: the work costs more time, never a hang or a missing file.
A worker that raises fails the whole at once (this process looks for news after each of its own files), and
leaving kills the workers (SIGKILL: they hold nothing to clean up, and a stopped one would never act on SIGTERM).
"""

from __future__ import annotations

import fcntl
import os
import signal
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from aoe_runner.common.lifeline import die_with

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

Result = TypeVar("Result")

MAX_WORKERS = 255  # the counter records a file's taker in a byte
_COUNTER = 8  # bytes of the counter at the start of the file; one byte per file follows: its taker's number + 1


class WorkerFailed(RuntimeError):
    """A worker raised: the message names its exception, and the cause is its traceback."""


class WorkerTraceback(Exception):
    """The traceback of an exception raised in a worker, as text (the crash log shows it as the cause)."""

    def __str__(self) -> str:
        return f"\n{self.args[0]}"


class SharedFiles:
    """A list of files handed out one at a time to whichever process asks, each remembering who took it."""

    def __init__(self, paths: list[str]) -> None:
        """Raises OSError when the counter cannot be made (no memory for it)."""
        self.paths = paths
        self._fd = os.memfd_create("aoe-runner-files")  # in memory, no name: no directory needed, nothing left over
        try:
            os.pwrite(self._fd, bytes(_COUNTER + len(paths)), 0)
        except OSError:
            os.close(self._fd)
            raise

    def take(self, taker: int) -> Iterator[str]:
        """The files that process number `taker` (0..254) takes, one at a time, until none is left."""
        fd, paths = self._fd, self.paths
        while True:
            fcntl.lockf(fd, fcntl.LOCK_EX)
            try:
                index = int.from_bytes(os.pread(fd, _COUNTER, 0), "little")
                os.pwrite(fd, (index + 1).to_bytes(_COUNTER, "little"), 0)
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN)
            if index >= len(paths):
                return
            os.pwrite(fd, bytes((taker + 1,)), _COUNTER + index)
            yield paths[index]

    def not_taken_by(self, takers: set[int]) -> list[str]:
        """The files that none of `takers` took (those of the others, and any whose taker died before saying)."""
        marks = os.pread(self._fd, len(self.paths), _COUNTER)
        return [path for path, mark in zip(self.paths, marks, strict=True) if mark - 1 not in takers]

    def close(self) -> None:
        os.close(self._fd)


class Sharing(Generic[Result]):
    """`work` over the files each process takes; a worker's result travels as `pack` makes it, `unpack` undoes it."""

    def __init__(
        self,
        work: Callable[[Iterator[str]], Result],
        pack: Callable[[Result], Any],
        unpack: Callable[[Any], Result],
    ) -> None:
        self.work, self.pack, self.unpack = work, pack, unpack

    def run(self, paths: list[str], workers: int) -> Iterator[Result]:
        """One result per process that took files, this process's first, then one for the files of any worker that
        died. Leaving early (an error, Ctrl-C, the caller stops) kills the workers at once."""
        import multiprocessing

        if not 1 < workers <= MAX_WORKERS:
            raise ValueError(f"workers must be from 2 to {MAX_WORKERS}, not {workers}")
        try:
            shared = SharedFiles(paths)
        except OSError:  # no memory for the counter: this process does it all
            yield self.work(iter(paths))
            return
        context = multiprocessing.get_context("fork")
        started: list[tuple[int, Any, Connection]] = []
        try:
            for number in range(1, workers):
                receiver, sender = context.Pipe(duplex=False)
                process = context.Process(target=self._serve, args=(shared, number, sender, os.getpid()), daemon=True)
                process.start()
                sender.close()  # the worker holds the only writer: its death is the end of the pipe
                started.append((number, process, receiver))
            inbox = _Inbox({receiver: number for number, _, receiver in started})
            yield self.work(inbox.reading_between(shared.take(0)))
            finished = {0}
            for number, payload in inbox.the_rest():
                finished.add(number)
                yield self.unpack(payload)
            lost = shared.not_taken_by(finished)
            if lost:
                yield self.work(iter(lost))
        finally:
            for _, process, receiver in started:
                if process.is_alive():
                    process.kill()
                process.join()
                receiver.close()
            shared.close()

    def _serve(self, shared: SharedFiles, number: int, sender: Connection, parent: int) -> None:
        """A worker's life: Ctrl-C is the parent's to handle (it stops the workers), and it dies with the parent,
        whatever kills it."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        die_with(parent)
        try:
            message = ("done", self.pack(self.work(shared.take(number))))
        except BaseException:
            message = ("failed", traceback.format_exc())
        sender.send(message)
        sender.close()


class _Inbox:
    """What the workers send, read as it arrives: a failure ends everything at once, a result waits to be used."""

    def __init__(self, waiting: dict[Connection, int]) -> None:
        self.waiting = waiting
        self.arrived: list[tuple[int, Any]] = []

    def reading_between(self, files: Iterator[str]) -> Iterator[str]:
        """`files`, reading whatever a worker has sent after each: one poll per worker and file, no wait."""
        for path in files:
            yield path
            for receiver in [receiver for receiver in self.waiting if receiver.poll()]:
                self._read(receiver)

    def the_rest(self) -> Iterator[tuple[int, Any]]:
        """Each worker's result (its number and payload), waiting for those not yet in; a worker that ended without
        one is skipped."""
        from multiprocessing.connection import wait

        while self.arrived or self.waiting:
            while self.arrived:
                yield self.arrived.pop(0)
            if self.waiting:
                for ready in wait(list(self.waiting)):
                    self._read(cast("Connection", ready))

    def _read(self, receiver: Connection) -> None:
        number = self.waiting.pop(receiver)
        try:
            outcome, payload = receiver.recv()
        except (EOFError, OSError):  # died before or while sending
            return
        if outcome == "failed":
            last_line = payload.rstrip().rsplit("\n", 1)[-1]
            raise WorkerFailed(f"report worker {number} failed: {last_line}") from WorkerTraceback(payload)
        self.arrived.append((number, payload))
