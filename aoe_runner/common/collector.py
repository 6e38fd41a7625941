"""The cyclic garbage collector, paused where aoe-runner makes many objects and no reference cycles.

Decoded JSON, merged bank entries and summaries are trees: reference counting frees them, and a collection only
walks them. While the collector is off, everything made is counted as young; switching it back on while those
objects are still alive makes the next allocation start a collection that walks all of them (twice per large
`report`). `paused_throughout` switches it back on only after the function has returned and
its locals are gone, when the count has fallen with them (when it raises, its frame lives on in the traceback: the
one collection that may then walk it costs time, never correctness).
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def paused() -> Iterator[None]:
    """No collections inside; afterwards the collector is as the caller had it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def paused_throughout(function: Callable[P, R]) -> Callable[P, R]:
    """`function` runs with no collections, and the collector is back as it was once it has returned."""

    @functools.wraps(function)
    def without_collections(*args: P.args, **kwargs: P.kwargs) -> R:
        with paused():
            return function(*args, **kwargs)

    return without_collections
