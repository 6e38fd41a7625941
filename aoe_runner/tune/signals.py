"""Signals around a run: before the script starts they cancel cleanly, after it ends they wait for the record.

`tune` is handled from its first line to its last. Before the script starts, SIGTERM and SIGHUP act like
Ctrl-C (a KeyboardInterrupt, so every cleanup runs and the exit code is 130). While the script runs, the
supervisor forwards them to it. After it ends, while the outcome is being recorded, they are only noted:
the record is always finished first.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread while this is active."""
    previous = {signum: signal.signal(signum, _interrupt) for signum in HANDLED}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def signals_deferred() -> Iterator[list[str]]:
    """Note SIGINT, SIGTERM and SIGHUP instead of acting on them; yields the names noted so far."""
    noted: list[str] = []
    previous = {signum: signal.signal(signum, lambda s, f: noted.append(signal.Signals(s).name)) for signum in HANDLED}
    try:
        yield noted
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
