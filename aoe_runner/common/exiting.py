"""Leaving the process as soon as a command's result is out, without freeing what the command made.

Freeing a large report's objects one at a time and then the interpreter's own teardown take a noticeable share of a
large report's time only to return memory that exiting returns anyway. When
aoe-runner runs as the program, a command whose result is written may leave through os._exit, as mypy does: the
exit handlers run first (atexit: multiprocessing's, tempfile's finalizers, any a caller registered), then stdout
and stderr are flushed. Called in-process (cli.main, as the tests do), or while another thread runs, it does
nothing and the command returns as usual.
"""

from __future__ import annotations

import atexit
import os
import sys

_as_program = False


def run_as_program() -> None:
    """This process is aoe-runner itself (__main__), so a command may end it."""
    global _as_program
    _as_program = True


def leave(code: int) -> None:
    """End the process now with `code` when it is aoe-runner itself and nothing else runs in it; else return."""
    threading = sys.modules.get("threading")
    if not _as_program or (threading is not None and threading.active_count() > 1):
        return
    end_now(code)


def end_now(code: int) -> None:
    """Run the exit handlers, flush stdout and stderr, and end the process with `code` (whatever else runs)."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with the descriptor closed
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a failure to write was reported when it happened
            pass
    os._exit(code)
