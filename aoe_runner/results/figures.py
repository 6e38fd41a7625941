"""Numbers read from result files: times and counts, and the improvement percentages checked against them."""

from __future__ import annotations

import math
from typing import Protocol

from aoe_runner.results.text import short_repr, short_text, shortened

# A percentage agrees with its times within rounding: 0.06 points, or 0.5% of the figure when that is more.
_ABSOLUTE_TOLERANCE = 0.06
_RELATIVE_TOLERANCE = 0.005
_EXACT_INTEGERS = 2**53
# A time is a measurement from SHORTEST_TIME (µs for operators, ms for models and subgraphs: shorter than any kernel
# or step runs) up to LONGEST_TIME: every speed-up, saving and sum of such times is a finite number.
SHORTEST_TIME = 1e-6
LONGEST_TIME = 1e300
NOT_MEASURED = f"a time is zero, negative, below {SHORTEST_TIME:g} or from {LONGEST_TIME:g}"


def measured(before: float, after: float) -> bool:
    """Both times are measurements (SHORTEST_TIME <= t < LONGEST_TIME): a denormal 5e-324 is not one, nor is 0."""
    return SHORTEST_TIME <= before < LONGEST_TIME and SHORTEST_TIME <= after < LONGEST_TIME


class RepoCounts(Protocol):
    """A repo summary's counts: model.RepoSummary, or the plain-file fast path's (no pydantic loaded)."""

    add: int | None
    hit: int | None
    reserved: int | None
    unsatisfied: int | None
    update: int | None
    total: int | None


def number(value: object) -> float | None:
    """A finite number from an int, a float or a numeric string; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        result = float(value)
    except (ValueError, OverflowError):  # OverflowError: an integer of 309 digits or more
        return None
    return result if math.isfinite(result) else None


def count(value: object) -> int | None:
    """A whole number that a float holds exactly (up to 2**53), as AOE's counts are; None for anything else.

    The bound keeps sums and ratios of counts finite: 1e308 is a float, and twice it divided by 1 is not.
    """
    result = number(value)
    return int(result) if result is not None and result == int(result) and abs(result) <= _EXACT_INTEGERS else None


def time_of(value: object) -> float | None:
    """A finite number as float; the comparison also rejects NaN and infinities."""
    kind = type(value)
    if (kind is float or kind is int) and -1e300 < value < 1e300:  # type: ignore[operator]
        return float(value)  # type: ignore[arg-type]
    return number(value)


def speedup_figure_matches(raw: object, before: float, after: float) -> bool:
    """The common case, a "12.34%" string that is before/after - 1; anything else takes the full check."""
    if type(raw) is not str or not raw.endswith("%") or after <= 0:
        return False
    try:
        claimed = float(raw[:-1])
    except ValueError:
        return False
    expected = (before / after - 1) * 100
    tolerance = abs(expected) * _RELATIVE_TOLERANCE  # _close, inlined: this runs once per record
    if tolerance < _ABSOLUTE_TOLERANCE:
        tolerance = _ABSOLUTE_TOLERANCE
    return -tolerance <= claimed - expected <= tolerance


def improvement_disagreement(raw: object, before: float, after: float) -> str | None:
    """Describe how a `performance_improvement` string disagrees with its times, or None when it agrees.

    The documented examples write before/after - 1 ("118.71%" for 58.781 -> 26.876); the prose says
    "time reduced", (before - after)/before. Either reading is accepted, within rounding.
    """
    if raw is None or before <= 0 or after <= 0:
        return None
    text = short_text(raw)
    try:
        claimed = float(text.strip().rstrip("%"))
    except ValueError:
        return f"{short_repr(raw)} is not a percentage"
    as_speedup = (before / after - 1) * 100
    as_reduction = (before - after) / before * 100
    if _close(claimed, as_speedup) or _close(claimed, as_reduction):
        return None
    return f"says {shortened(text)}, times give {as_speedup:.2f}%"


def _close(claimed: float, expected: float) -> bool:
    return abs(claimed - expected) <= max(_ABSOLUTE_TOLERANCE, abs(expected) * _RELATIVE_TOLERANCE)


def repo_summary_mismatches(s: RepoCounts) -> list[str]:
    """The documented identities hit = reserved + update and total = add + hit + unsatisfied."""
    problems = []
    if None not in (s.hit, s.reserved, s.update) and s.hit != s.reserved + s.update:  # type: ignore[operator]
        problems.append(f"hit {s.hit} != reserved {s.reserved} + update {s.update}")
    if None not in (s.total, s.add, s.hit, s.unsatisfied) and s.total != s.add + s.hit + s.unsatisfied:  # type: ignore[operator]
        problems.append(f"total {s.total} != add {s.add} + hit {s.hit} + unsatisfied {s.unsatisfied}")
    return problems
