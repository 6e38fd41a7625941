"""What a preflight check returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from aoe_runner.common.plain_data import FIELD_DOCSTRINGS
from aoe_runner.common.words import GIB, size_text

__all__ = ["GIB", "CheckResult", "Status", "size_text"]


class Status(str, Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(kw_only=True)
class CheckResult:
    __pydantic_config__ = FIELD_DOCSTRINGS

    id: str
    title: str
    status: Status
    observed: str
    required: str
    formula: str | None = None
    """The rule with this host's numbers filled in."""
    sources: list[str] = field(default_factory=list)
    """Where each number came from."""
    fix: str | None = None
    reference: str | None = None
    """Where the rule is documented."""
