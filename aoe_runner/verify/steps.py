"""Step times from a training log: the formats of AOE.md §3, or a pattern the user gives.

Every value a format captures must be a step time: a decimal number giving between 1 ns and 10^12 ms a step (so the
ratio of any two stays finite). Anything else (0, a negative number, 1e999, nan, text, an empty group) is an InputError
naming the log and its line, exit 4: no verdict is drawn from a log that says something impossible.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from aoe_runner.errors import InputError, UsageError

# a number as the built-in formats find it, and what only looks like one (a sign, inf, nan) so that step_ms refuses it
_NUMBER = r"([+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|[+-]?(?i:inf(?:inity)?|nan)\b)"
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
MAX_DEFAULT_WARMUP = 5
SHORTEST_MS, LONGEST_MS = 1e-6, 1e12


class Unit(str, Enum):
    MS = "ms"
    S = "s"
    STEPS_PER_S = "steps/s"

    def to_ms(self, value: float) -> float:
        if self is Unit.MS:
            return value
        if self is Unit.S:
            return value * 1000
        return 1000 / value if value > 0 else math.inf  # a rate: time per step is its inverse

    def step_ms(self, captured: str | None) -> float:
        """One captured value as a step time in ms; ValueError saying why it is not one."""
        text = (captured or "").strip()
        if not text:
            raise ValueError("the step-time group captured nothing")
        if _DECIMAL.fullmatch(text) is None:
            raise ValueError(f"step time {_shortened(text)!r} is not a decimal number")
        value = self.to_ms(float(text))
        if not SHORTEST_MS <= value <= LONGEST_MS:
            raise ValueError(f"step time {_shortened(text)} {self.value} is not a step time: it must be 1 ns to 10^12 ms")
        return value


@dataclass(frozen=True)
class StepFormat:
    name: str
    pattern: re.Pattern[str]
    unit: Unit

    def step_times_ms(self, text: str, log: str = "the run's log") -> list[float]:
        """Every step time in text, in ms; InputError at the first captured value that is not one, naming log and line."""
        times = []
        for match in self.pattern.finditer(text):
            try:
                times.append(self.unit.step_ms(match.group(1)))
            except ValueError as error:
                line = text.count("\n", 0, match.start()) + 1
                raise InputError(f"{log}, line {line}", f"{error} (read as {self.name})") from None
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


def _shortened(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:40]}…"
