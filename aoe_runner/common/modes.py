"""The two tuning modes, apart from the preflight models: run records and the command line name them without
loading pydantic's preflight schemas."""

from __future__ import annotations

from enum import Enum

from aoe_runner.errors import UsageError


class TuneMode(str, Enum):
    OP = "op"
    SUBGRAPH = "subgraph"

    @property
    def aoe_mode(self) -> str:
        """The AOE_MODE value that switches this mode on."""
        return "2" if self is TuneMode.OP else "1"

    @classmethod
    def parse(cls, text: str) -> TuneMode:
        """`op`/`subgraph`, or their aliases `2`/`1` and `opat`/`sgat`."""
        mode = _MODE_ALIASES.get(text.strip().lower())
        if mode is None:
            raise UsageError(f"--mode: {text!r} is not one of op, subgraph (or 2, 1, opat, sgat)")
        return mode


_MODE_ALIASES = {
    "op": TuneMode.OP,
    "2": TuneMode.OP,
    "opat": TuneMode.OP,
    "subgraph": TuneMode.SUBGRAPH,
    "1": TuneMode.SUBGRAPH,
    "sgat": TuneMode.SUBGRAPH,
}
