"""Reading a script's pipes: widened where Linux lets us, read in large pieces, and gathered while output pours in.

A relay that reads as fast as the script writes pays a system call per line; waiting a moment when reads come back
small lets each read take more (gather_below, read_unpolled_again). The supervisor's loop uses these.
"""

from __future__ import annotations

import fcntl
import os

READ_SIZE = 1 << 20  # the most one relay takes from a pipe before serving the loop again


READ_PIECE = 1 << 16  # taken in reads of this size: see take_available


BATCH_BELOW = 1 << 16  # a read smaller than this, while output pours in, means we read faster than it comes:


BATCH_WAIT_S = 0.002  # wait this long before the next read, so that each read takes more and costs less


QUIET_WAIT_S = 0.05  # an unpolled pipe with nothing in it is looked at again after at most this long


PIPE_SIZE = 1 << 20  # the default maximum an unprivileged process may ask for


DEFAULT_PIPE_SIZE = 1 << 16  # Linux's, where a pipe cannot be widened or asked its size


GATHER_MIN_PIPE = 1 << 19  # a pipe smaller than this is never left to gather (gather_below)


_F_SETPIPE_SZ: int | None = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only (Python 3.10+ names it)


_F_GETPIPE_SZ: int | None = getattr(fcntl, "F_GETPIPE_SZ", None)


def widen(pipe: int) -> int:
    """Ask for a pipe of PIPE_SIZE: a chatty script then costs a quarter of the reads and wake-ups (Linux only).

    Returns the pipe's size as it is now: the default where it could not be widened.
    """
    if _F_SETPIPE_SZ is not None:
        try:
            fcntl.fcntl(pipe, _F_SETPIPE_SZ, PIPE_SIZE)
        except OSError:  # over the user's pipe-buffer quota, or /proc/sys/fs/pipe-max-size is lower: the default stands
            pass
    if _F_GETPIPE_SZ is None:
        return DEFAULT_PIPE_SIZE
    try:
        return int(fcntl.fcntl(pipe, _F_GETPIPE_SZ))
    except OSError:
        return DEFAULT_PIPE_SIZE


def take_available(fd: int) -> bytes:
    """What a non-blocking pipe holds, up to READ_SIZE; b"" at end of file, BlockingIOError when it is empty.

    It is read in pieces of READ_PIECE and joined. One large read holds the pipe's lock while it copies, and the
    script's every write waits on that lock meanwhile; the large buffer is also fresh memory, faulted in page by page
    under that lock. Pieces are reused heap memory and a short hold: a flood of one-line writes ran 1.13 s with reads of
    1 MiB and 1.02 s with pieces (median of 9, the script's CPU time 1.00 s against 0.94 s).
    """
    pieces = [os.read(fd, READ_PIECE)]
    taken = len(pieces[0])
    while taken == READ_PIECE * len(pieces) and taken < READ_SIZE:  # every piece full: there may be more
        try:
            piece = os.read(fd, READ_PIECE)
        except OSError:  # empty now; any other error comes again with the next call, after what was taken is relayed
            break
        if not piece:
            break  # the end of file comes with the next call
        pieces.append(piece)
        taken += len(piece)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def read_unpolled_again(relayed: int, gather: int, waited: float) -> float:
    """When to read unpolled pipes next, after reading `relayed` bytes from them.

    The script's output pipes are not polled when they are wide enough to gather what it writes meanwhile: Linux
    (5.14 and later) wakes a pipe's pollers on every write once it has been polled, and the script's writes then cost
    it more CPU (bench/tune_bench.py measures the relay against tee). They are read on our own
    schedule instead: at once after a large read, BATCH_WAIT_S after a small one, and after waits doubling up to
    QUIET_WAIT_S while nothing comes, so a quiet script's line reaches the terminal at most QUIET_WAIT_S late.
    """
    if relayed >= gather:
        return 0.0
    if relayed:
        return BATCH_WAIT_S
    return min(max(2 * waited, BATCH_WAIT_S), QUIET_WAIT_S)


def gather_below(pipe_size: int) -> int:
    """Reads smaller than this are followed by a pause of BATCH_WAIT_S, so that output gathers in the pipe; 0: the pipe
    is polled and read as soon as anything is in it.

    Only a pipe that holds what a flood writes in the pause (GATHER_MIN_PIPE or more) may pause: in Linux's default
    64 KiB pipe, where a pipe could not be widened, the script would wait out most of each pause (a flood ran several
    times slower), so such a pipe is read as it fills, paying more reads for it.
    """
    return BATCH_BELOW if pipe_size >= GATHER_MIN_PIPE else 0
