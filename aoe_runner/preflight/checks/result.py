"""What a preflight check returns."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field

GIB = 2**30


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


def size_text(n: float) -> str:
    """Bytes in the largest binary unit that keeps the figure at least 1 (GiB for anything from 1 GiB up)."""
    for unit, factor in (("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n:.0f} bytes"
