"""Child processes that cannot outlive aoe-runner: the kernel's parent-death signal (Linux prctl)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def linux_prctl() -> Callable[..., int] | None:
    """The C library's prctl(2), or None off Linux or where it cannot be found."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with(parent: int) -> None:
    """In a child of `parent`: have the kernel SIGKILL it when the parent dies; exit now if it already has."""
    prctl = linux_prctl()
    if prctl is None:
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def die_with_this_process() -> Callable[[], None] | None:
    """A preexec_fn for subprocess that ties the child's life to ours; None where the kernel cannot."""
    if linux_prctl() is None:
        return None
    parent = os.getpid()
    return lambda: die_with(parent)
