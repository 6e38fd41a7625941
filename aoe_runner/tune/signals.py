"""Signals around a run: before the script starts they cancel cleanly, from then on they are counted.

SIGINT, SIGTERM and SIGHUP are counted through the signal wakeup pipe, one byte per delivery: Python runs a
handler once for any number of deliveries it has not yet got to, so a handler cannot count (a quick double
Ctrl-C would read as one). One pipe serves a whole run, from before its start is recorded to the end of the
command, so no signal falls between two handlers:
- before a run starts (`cancelling`), a signal also raises KeyboardInterrupt, so every cleanup runs and the exit
  code is 130 (SIGTERM and SIGHUP act like Ctrl-C);
- while the script runs, the supervisor reads the pipe and stops the run (a signal that came while the run was
  being prepared is read first, and stops the script as soon as it has started);
- after it ends, what arrives is read as a late signal: the record is always finished first.
The kernel still merges a signal with the same one still pending, so two sent before aoe-runner gets a CPU
between them count as one.
"""

from __future__ import annotations

import os
import signal
from types import FrameType, TracebackType

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class CountedSignals:
    """SIGINT, SIGTERM and SIGHUP counted through the wakeup pipe while this is active; while `cancelling` they
    also raise KeyboardInterrupt in the main thread."""

    def __init__(self, cancelling: bool = False) -> None:
        self.cancelling = cancelling
        self._read = self._write = -1
        self._previous_handlers: dict[int, object] = {}
        self._previous_wakeup = -1

    def __enter__(self) -> CountedSignals:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._previous_wakeup = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._previous_handlers = {signum: signal.signal(signum, self._handle) for signum in HANDLED}
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        for signum, handler in self._previous_handlers.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        signal.set_wakeup_fd(self._previous_wakeup)
        os.close(self._read)
        os.close(self._write)

    @property
    def fd(self) -> int:
        """The pipe's end to wait on: readable when a signal has arrived."""
        return self._read

    def stop_cancelling(self) -> None:
        """From now on signals are only counted (a run is about to start: it must be recorded, whatever arrives)."""
        self.cancelling = False

    def take(self) -> list[int]:
        """The signals that arrived since the last call, one per delivery, in order."""
        taken = b""
        try:
            while chunk := os.read(self._read, 4096):
                taken += chunk
        except BlockingIOError:
            pass
        return [signum for signum in taken if signum in HANDLED]

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.cancelling:
            raise KeyboardInterrupt(signal.Signals(signum).name)
