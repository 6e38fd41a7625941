"""What a preflight check returns."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field

from aoe_runner.render.numbers import GIB, size_text

__all__ = ["GIB", "CheckResult", "Status", "size_text"]


class Status(str, Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


class CheckResult(BaseModel):
    id: str
    title: str
    status: Status
    observed: str
    required: str
    formula: str | None = Field(None, description="The rule with this host's numbers filled in.")
    sources: list[str] = Field(default_factory=list, description="Where each number came from.")
    fix: str | None = None
    reference: str | None = Field(None, description="Where the rule is documented.")
