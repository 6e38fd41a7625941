"""A published bank version (`NAME@N`): what it holds, where it came from, and the verification that proves it.

Kept whole in `$AOE_RUNNER_HOME/releases/<name>/<N>.json`, and in the shared store's `bank_versions` table when one
is chosen. Its files are a bank inventory in the blob store (content-addressed: versions share unchanged files).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from aoe_runner.common.plain_data import FIELD_DOCSTRINGS
from aoe_runner.common.quantities import ascii_digits
from aoe_runner.errors import UsageError
from aoe_runner.runs.manifest import Fingerprint

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
RUNTIME_KB = "runtime_kb"  # AOE never merges these files (AOE.md §3): a version leaves them out


@dataclass(kw_only=True)
class Source:
    """One tuning run whose bank, as the run left it, went into the version."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    run: str
    host: str
    bank: str
    """The bank directory as the run used it."""
    files: int


@dataclass(kw_only=True)
class Proof:
    """A passing `verify` of a source run's bank: its tuned arm ran with exactly the bank the run left."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    verification: str
    run: str
    speedup: float
    """Median step time, baseline over tuned: above 1 the bank made training faster."""
    ci_low: float
    ci_high: float
    gates: list[str] = field(default_factory=list)
    """Each gate it was run with, as `gate statistic limit%`."""


@dataclass(kw_only=True)
class BankVersion:
    """`aoe-runner bank show NAME@N --json`."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    name: str
    number: int
    published_at: datetime
    host: str
    """Where it was published."""
    note: str | None = None
    fingerprint: Fingerprint
    """The environment of the tuning run(s): a pull onto another SoC or CANN is refused."""
    soc: str | None
    """The SoC the operator files are for."""
    sources: list[Source]
    proofs: list[Proof] = field(default_factory=list)
    unverified: bool = False
    """Published with --unverified: no passing verification stands behind it."""
    inventory: str
    """Id of the version's bank inventory in the blob store."""
    files: int
    bytes: int
    left_out: list[str] = field(default_factory=list)
    """Files of the runs' banks that are not in the version, each with why (runtime_kb, another SoC)."""
    preferred: str | None = None
    """With several sources: the run whose file won where two differed (--prefer)."""
    merged_by: str | None = None
    """With --merge-with-aoe: AOE's merge tool that combined the sources' banks, its path and CANN version."""

    @property
    def label(self) -> str:
        return f"{self.name}@{self.number}"


def parse_reference(text: str) -> tuple[str, int | None]:
    """NAME or NAME@N: the name and the number (None: the latest)."""
    name, at, number = text.partition("@")
    check_name(name)
    if not at:
        return name, None
    if not ascii_digits(number) or int(number) < 1:
        raise UsageError(f"{text!r}: a version is NAME@N with N a whole number from 1")
    return name, int(number)


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise UsageError(
            f"{name!r} is not a bank name: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name
