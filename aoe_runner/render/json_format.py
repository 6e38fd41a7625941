"""`--format json`: the pydantic models as they are, the stable machine-readable output.

A summary is written from its plain data with orjson, which writes every value as pydantic does but a float
with a positive exponent (`1e16`, pydantic `1e+16`) and cannot write a lone surrogate; for such a summary (rare:
hostile values or names) the pydantic model writes it. Tests compare both on every fixture, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aoe_runner.jsontext import dump_json

if TYPE_CHECKING:
    from aoe_runner.diff import BankDiff
    from aoe_runner.summary import BankSummary

_EXPONENT_FROM = 1e16  # orjson and pydantic both write floats from here on with an exponent, orjson without its +
_ENTRY_FLOATS = ("before_us", "after_us", "before_ms", "after_ms", "speedup", "time_saved_us", "time_saved_ms")


class JsonFormatter:
    def summary(self, summary: BankSummary, top: int | None) -> str:
        if top is not None:
            summary = summary.model_copy(update={"operators": summary.operators[:top], "subgraphs": summary.subgraphs[:top]})
        return dump_json(summary)

    def summary_data(self, data: dict[str, Any], top: int | None, model: Callable[[], BankSummary]) -> str | bytes:
        """The same text as summary(model(), top), from the summary's plain data (reporting.Loaded.data); as UTF-8
        bytes when orjson writes it (a large summary is written out as it is, never decoded and encoded again)."""
        if top is not None:
            data = {**data, "operators": data["operators"][:top], "subgraphs": data["subgraphs"][:top]}
        text = plain_json(data)
        return text if text is not None else self.summary(model(), top)

    def diff(self, diff: BankDiff, top: int | None) -> str:
        if top is not None:
            diff = diff.model_copy(update={"changes": diff.changes[:top]})
        return dump_json(diff)


def plain_json(data: Any) -> bytes | None:
    """Indented JSON of plain data exactly as pydantic's model_dump_json(indent=2) writes it, with a final newline,
    in UTF-8; None when orjson cannot write it so. orjson indents as it writes, in one pass: msgspec's encode, format and
    newline made three copies and took 58-90 ms against 12-36 ms on a 26 MB summary (measured in one process)."""
    import orjson

    if _holds_exponent_float(data):
        return None
    try:
        return orjson.dumps(data, default=_model_data, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:  # a lone surrogate, an integer beyond 64 bits
        return None


def _holds_exponent_float(data: dict[str, Any]) -> bool:
    """Is any float in this summary data written with an exponent of 16 or more? Entries are checked by field."""
    from aoe_runner.summary_data import largest_magnitude  # compiled with the summary where mypyc is

    for entries in (data["operators"], data["subgraphs"]):
        names = [name for name in _ENTRY_FLOATS if entries and name in entries[0]]
        if names and _big(largest_magnitude(entries, names)):
            return True
    return any(_any_big(item) for key, item in data.items() if key not in ("operators", "subgraphs"))


def _any_big(value: Any) -> bool:
    if type(value) is dict:
        return any(_any_big(item) for item in value.values())
    if type(value) is list:  # conflicts and no_real_gain: tens of thousands of strings, passed over in C
        return any(_any_big(item) for item in value if type(item) is not str)
    if hasattr(value, "model_dump"):
        return _any_big(value.model_dump(mode="json"))
    return _big(value)


def _big(value: Any) -> bool:
    return type(value) is float and not -_EXPONENT_FROM < value < _EXPONENT_FROM and value == value


def _model_data(value: Any) -> Any:
    """A pydantic model inside plain data (the legacy part of a summary) as pydantic writes it."""
    dump = getattr(value, "model_dump", None)
    if dump is None:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")
    return dump(mode="json")
