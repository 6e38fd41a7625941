"""JSON text of our own models, exact for any string, and back.

A name or path can hold a lone surrogate: a result file's `"\ud800"`, or a non-UTF-8 byte of a file name
(Python decodes it as `\udcff`). JSON writes it as that escape, but pydantic refuses it both ways, so both
directions fall back to the standard library for such documents only.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # pydantic loads with the models that are written or read, not with this module
    from pydantic import BaseModel

_SURROGATE = re.compile("[\ud800-\udfff]")
_Model = TypeVar("_Model", bound="BaseModel")


def dump_json(model: BaseModel, indent: int | None = 2) -> str:
    """The model as JSON (indented, with a final newline, unless indent is None)."""
    from pydantic_core import PydanticSerializationError

    end = "\n" if indent is not None else ""
    try:
        return model.model_dump_json(indent=indent) + end
    except PydanticSerializationError:
        separators = None if indent is not None else (",", ":")
        text = json.dumps(_finite(model.model_dump(mode="json")), indent=indent, ensure_ascii=False, separators=separators)
        return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text) + end


def load_json(model: type[_Model], data: bytes | str) -> _Model:
    """model.model_validate_json, also for JSON that holds an escaped lone surrogate; raises ValidationError or ValueError."""
    from pydantic import ValidationError

    try:
        return model.model_validate_json(data)
    except ValidationError as error:
        if not any(problem["type"] == "json_invalid" and "surrogate" in problem["msg"] for problem in error.errors()):
            raise
    return model.model_validate(json.loads(data))


def _finite(value: object) -> object:
    """None for inf and NaN, as pydantic writes them (null), in place of json's invalid Infinity and NaN."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
