"""What `aoe-runner verify` proves, as it is written (`--format json`) and rendered: the report of one verification."""

from __future__ import annotations

from pydantic import BaseModel, Field, PrivateAttr

from aoe_runner.verify.evidence import Evidence
from aoe_runner.verify.gates import GateResult
from aoe_runner.verify.measure import RunSteps
from aoe_runner.verify.stats import Comparison, Verdict


class VerifyReport(BaseModel):
    """`aoe-runner verify --format json`."""

    schema_version: int = 2
    verification: str
    script: str
    arguments: list[str]
    bank: str
    tuning_run: str | None
    published: str | None = Field(default=None, description="The published bank version (NAME@N) the tuned arm used, as pulled.")
    repeats: int
    step_format: str = Field(description="The step-time format read from the logs.")
    warmup: str = Field(description="How many leading steps of each run were dropped.")
    runs: list[RunSteps]
    comparison: Comparison
    gates: list[GateResult] = Field(description="One per gate given (--max-tail-regression gives P95 and P99); empty: none.")
    gates_passed: bool = Field(description="Every gate passed (true when none was given).")
    evidence: Evidence
    warnings: list[str] = Field(description="What makes the figures less trustworthy, e.g. runs with few step times.")
    _step_times_ms: list[list[float]] | None = PrivateAttr(default=None)  # not in the JSON: for the HTML page's boxes

    @property
    def slower(self) -> bool:
        """The tuned arm is slower beyond the threshold: the verdict that fails the command."""
        return self.comparison.verdict is Verdict.SLOWER

    @property
    def step_times_ms(self) -> list[list[float]] | None:
        """Each run's step times after warm-up, in ms and in run order; None for a report read back from JSON."""
        return self._step_times_ms
