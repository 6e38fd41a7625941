"""Step times from a training log: the formats of AOE.md §3, or a pattern the user gives."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from aoe_runner.errors import UsageError

_NUMBER = r"(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)"
MAX_DEFAULT_WARMUP = 5


class Unit(str, Enum):
    MS = "ms"
    S = "s"
    STEPS_PER_S = "steps/s"

    def to_ms(self, value: float) -> float | None:
        if self is Unit.MS:
            return value
        if self is Unit.S:
            return value * 1000
        return 1000 / value if value > 0 else None  # a rate: time per step is its inverse


@dataclass(frozen=True)
class StepFormat:
    name: str
    pattern: re.Pattern[str]
    unit: Unit

    def step_times_ms(self, text: str) -> list[float]:
        times = []
        for match in self.pattern.finditer(text):
            value = self.unit.to_ms(float(match.group(1)))
            if value is not None:
                times.append(value)
        return times


BUILT_IN = (
    StepFormat("MindSpore `per step time: X ms`", re.compile(rf"per step time:\s*{_NUMBER}\s*ms\b"), Unit.MS),
    StepFormat("MindSpore `per step time: X s`", re.compile(rf"per step time:\s*{_NUMBER}\s*s\b"), Unit.S),
    StepFormat("TensorFlow `global_step/sec: X`", re.compile(rf"global_step/sec:\s*{_NUMBER}"), Unit.STEPS_PER_S),
    StepFormat("`step time X ms`", re.compile(rf"step[ _]time\s*[:=]?\s*{_NUMBER}\s*ms\b", re.IGNORECASE), Unit.MS),
    StepFormat("`step time X s`", re.compile(rf"step[ _]time\s*[:=]?\s*{_NUMBER}\s*s\b", re.IGNORECASE), Unit.S),
)


def custom_format(pattern: str, unit: str | None) -> StepFormat:
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise UsageError(f"--step-pattern: {pattern!r} is not a regular expression: {error}") from None
    if compiled.groups != 1:
        raise UsageError(f"--step-pattern: {pattern!r} must have exactly one capture group (it has {compiled.groups})")
    return StepFormat(f"--step-pattern {pattern}", compiled, parse_unit(unit or "ms"))


def parse_unit(text: str) -> Unit:
    try:
        return Unit(text.strip().lower())
    except ValueError:
        raise UsageError(f"--unit: {text!r} is not one of ms, s, steps/s") from None


def detect_format(texts: Sequence[str]) -> StepFormat | None:
    """The built-in format with the most matches over all logs; the more specific one wins a tie."""
    counts = [(sum(len(fmt.pattern.findall(text)) for text in texts), -index, fmt) for index, fmt in enumerate(BUILT_IN)]
    best = max(counts, key=lambda item: (item[0], item[1]))
    return best[2] if best[0] else None


def default_warmup(steps: int) -> int:
    """Up to 5 steps, and never more than a quarter of a run's steps (a per-epoch log has few lines)."""
    return min(MAX_DEFAULT_WARMUP, steps // 4)
