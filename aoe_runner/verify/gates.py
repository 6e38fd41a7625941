"""Release gates on a verification: a minimum speed-up (median, mean) and a maximum tail regression (P95, P99).

Each gate compares the end of its statistic's interval that a sceptic would pick: a speed-up gate passes when the
interval's lower bound is at least the required speed-up; a tail gate passes when the interval's upper bound of how
much slower tuned's P95 (P99) is stays at most the allowed regression. So a gate passes only when the data show it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from aoe_runner.verify.stats import CONFIDENCE, Change, Comparison, Statistic

GateName = Literal["min-speedup", "min-mean-speedup", "max-tail-regression"]
_LABEL = {"median": "median speed-up", "mean": "mean speed-up", "p95": "P95 step time", "p99": "P99 step time"}


@dataclass(frozen=True)
class Gates:
    min_speedup_pct: float | None = None
    min_mean_speedup_pct: float | None = None
    max_tail_regression_pct: float | None = None

    def given(self) -> list[str]:
        names = ("--min-speedup", "--min-mean-speedup", "--max-tail-regression")
        values = (self.min_speedup_pct, self.min_mean_speedup_pct, self.max_tail_regression_pct)
        return [name for name, value in zip(names, values, strict=True) if value is not None]


class GateResult(BaseModel):
    gate: GateName
    statistic: Statistic
    limit_pct: float = Field(description="The required speed-up, or the allowed regression, in %.")
    estimate_pct: float = Field(description="Speed-up gates: (speed-up - 1) x 100; tail gates: how much slower tuned is.")
    ci_low_pct: float
    ci_high_pct: float
    bound_pct: float = Field(description="The end of the interval the gate compares: the lower (speed-up) or upper (tail).")
    passed: bool
    margin_pct: float = Field(description="Points by which the bound clears the limit; negative: by how much it fails.")
    detectable_pct: float = Field(description="The statistic's minimum detectable effect (see the comparison).")
    explanation: str


def evaluate(comparison: Comparison, gates: Gates) -> list[GateResult]:
    results = []
    if gates.min_speedup_pct is not None:
        results.append(_speedup_gate("min-speedup", comparison.change("median"), gates.min_speedup_pct))
    if gates.min_mean_speedup_pct is not None:
        results.append(_speedup_gate("min-mean-speedup", comparison.change("mean"), gates.min_mean_speedup_pct))
    if gates.max_tail_regression_pct is not None:
        for statistic in ("p95", "p99"):
            results.append(_tail_gate(comparison.change(statistic), gates.max_tail_regression_pct))
    return results


def _speedup_gate(gate: GateName, change: Change, limit: float) -> GateResult:
    low, high = (change.ci_low - 1) * 100, (change.ci_high - 1) * 100
    margin = low - limit
    passed = margin >= 0
    label = _LABEL[change.statistic]
    if passed:
        said = f"{label}: the {CONFIDENCE:.0%} interval's lower bound {low:+.1f}% clears the required {limit:+g}%"
    else:
        said = f"{label}: the {CONFIDENCE:.0%} interval's lower bound {low:+.1f}% is {-margin:.1f} points short"
        said += f" of the required {limit:+g}%"
    estimate = (change.speedup - 1) * 100
    return GateResult(
        gate=gate,
        statistic=change.statistic,
        limit_pct=limit,
        estimate_pct=estimate,
        ci_low_pct=low,
        ci_high_pct=high,
        bound_pct=low,
        passed=passed,
        margin_pct=margin,
        detectable_pct=change.detectable_pct,
        explanation=said + _hint(passed, estimate >= limit, change),
    )


def _tail_gate(change: Change, limit: float) -> GateResult:
    high = change.change_ci_high_pct
    margin = limit - high
    passed = margin >= 0
    label = _LABEL[change.statistic]
    if passed:
        said = f"{label}: the {CONFIDENCE:.0%} interval's worst case {high:+.1f}% is within the allowed {limit:+g}%"
    else:
        said = f"{label}: the {CONFIDENCE:.0%} interval's worst case {high:+.1f}% is {-margin:.1f} points beyond"
        said += f" the allowed {limit:+g}%"
    return GateResult(
        gate="max-tail-regression",
        statistic=change.statistic,
        limit_pct=limit,
        estimate_pct=change.change_pct,
        ci_low_pct=change.change_ci_low_pct,
        ci_high_pct=high,
        bound_pct=high,
        passed=passed,
        margin_pct=margin,
        detectable_pct=change.detectable_pct,
        explanation=said + _hint(passed, change.change_pct <= limit, change),
    )


def _hint(passed: bool, estimate_passes: bool, change: Change) -> str:
    """When only the interval fails a gate, say so: more runs, not a worse bank, may be what is missing."""
    if passed or not estimate_passes:
        return ""
    return (
        f" (the estimate itself passes; the interval is too wide, with changes under {change.detectable_pct:.1f}% "
        "beyond this design's power: more --repeats narrow it)"
    )
