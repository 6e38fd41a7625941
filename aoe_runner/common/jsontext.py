"""JSON text of our own records (pydantic models, or the plain dataclasses of plain_data), exact for any string, and back.

A name or path can hold a lone surrogate: a result file's `"\ud800"`, or a non-UTF-8 byte of a file name
(Python decodes it as `\udcff`). JSON writes it as that escape, but pydantic refuses it both ways, so both
directions fall back to the standard library for such documents only.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # pydantic loads with the records that are written or read, not with this module
    from pydantic import TypeAdapter, ValidationError

_SURROGATE = re.compile("[\ud800-\udfff]")
_Record = TypeVar("_Record")
_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def dump_json(record: object, indent: int | None = 2) -> str:
    """The record as JSON (indented, with a final newline, unless indent is None).

    A pydantic model writes itself; a plain dataclass is written by msgspec, which needs no schema built first and
    writes what pydantic would (floats' exponents aside: 1e22, not 1e+22), so writing a run record loads no pydantic.
    """
    import msgspec

    end = "\n" if indent is not None else ""
    model = getattr(record, "model_dump_json", None)
    try:
        if model is not None:
            return model(indent=indent) + end
        encoded = msgspec.json.encode(record)
        return (msgspec.json.format(encoded, indent=indent) if indent is not None else encoded).decode() + end
    except (UnicodeEncodeError, ValueError):  # a lone surrogate (pydantic's error is a ValueError)
        plain = record.model_dump(mode="json") if model is not None else msgspec.to_builtins(record)  # type: ignore[attr-defined]
        separators = None if indent is not None else (",", ":")
        text = json.dumps(_finite(plain), indent=indent, ensure_ascii=False, separators=separators)
        return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text) + end


def load_json(kind: type[_Record], data: bytes | str) -> _Record:
    """The `kind` record in data, also when it holds an escaped lone surrogate; raises ValidationError or ValueError."""
    from pydantic import ValidationError

    adapter = _adapter(kind)
    try:
        return adapter.validate_json(data)
    except ValidationError as error:
        if not any(problem["type"] == "json_invalid" and "surrogate" in problem["msg"] for problem in error.errors()):
            raise
    return adapter.validate_python(json.loads(data))


def first_problem(error: ValidationError) -> tuple[str, str]:
    """Where a record's first problem is (`bank_after.stored_bytes`; empty at its top level) and what it is, without
    pydantic's "Value error, " in front of a validator's own words."""
    first = error.errors()[0]
    return ".".join(str(part) for part in first["loc"]), first["msg"].removeprefix("Value error, ")


def _adapter(kind: type[Any]) -> TypeAdapter[Any]:
    """pydantic's reader and writer of kind, built once per process (a model's is built with the model)."""
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        from pydantic import TypeAdapter

        adapter = _ADAPTERS[kind] = TypeAdapter(kind)
    return adapter


def _finite(value: object) -> object:
    """None for inf and NaN, as pydantic writes them (null), in place of json's invalid Infinity and NaN."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
