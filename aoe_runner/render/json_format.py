"""`--format json`: the pydantic models as they are, the stable machine-readable output."""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

if TYPE_CHECKING:
    from aoe_runner.diff import BankDiff
    from aoe_runner.summary import BankSummary

_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonFormatter:
    def summary(self, summary: BankSummary, top: int | None) -> str:
        if top is not None:
            summary = summary.model_copy(update={"operators": summary.operators[:top], "subgraphs": summary.subgraphs[:top]})
        return dump_json(summary)

    def diff(self, diff: BankDiff, top: int | None) -> str:
        if top is not None:
            diff = diff.model_copy(update={"changes": diff.changes[:top]})
        return dump_json(diff)


def dump_json(model: BaseModel) -> str:
    """The model as indented JSON, exact for any string: pydantic refuses a lone surrogate (a name can hold one,
    decoded from a file's "\\ud800"), which JSON writes as the escape it came from."""
    try:
        return model.model_dump_json(indent=2) + "\n"
    except PydanticSerializationError:
        text = json.dumps(_finite(model.model_dump(mode="json")), indent=2, ensure_ascii=False)
        return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text) + "\n"


def _finite(value: object) -> object:
    """None for inf and NaN, as pydantic writes them (null), in place of json's invalid Infinity and NaN."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
