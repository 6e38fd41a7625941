"""Each verify run's step times, read as soon as the run ends: a log without usable step times stops verify at once.

The format is the --step-pattern, or the built-in format that matches most in the first run's log; every later run
is read with the same one. The warm-up is dropped here, and a run left with fewer than MIN_STEPS step times is
warned about (once), since its median and tails then rest on a handful of steps, maybe still compiling ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from aoe_runner.errors import AoeRunnerError, ExitCode
from aoe_runner.verify.stats import RunFigures, run_figures
from aoe_runner.verify.steps import BUILT_IN, StepFormat, default_warmup, detect_format

MIN_STEPS = 20
Arm = Literal["baseline", "tuned"]


class RunFailed(AoeRunnerError):
    exit_code = ExitCode.BAD_INPUT


class RunSteps(BaseModel):
    run: str
    arm: Arm
    repeat: int
    steps_printed: int
    warmup_dropped: int
    median_ms: float
    mean_ms: float
    p95_ms: float = Field(description="95th percentile of the run's step times after warm-up.")
    p99_ms: float
    bank_sha256: str = Field(description="sha256 of the inventory of the bank the run was given (see evidence).")
    log: str


@dataclass
class Measured:
    steps: RunSteps
    kept_ms: list[float]


class StepReader:
    def __init__(self, step_format: StepFormat | None, warmup: int | None, warn: Callable[[str], None]) -> None:
        self.format = step_format
        self.given = step_format is not None
        self.warmup = warmup
        self.warn = warn
        self.short_runs: list[str] = []

    def read(self, run: str, arm: Arm, repeat: int, log: Path, bank_sha256: str) -> Measured:
        where = f"run {run} ({arm} {repeat})"
        text = log.read_text(errors="replace")
        chosen = self._format_for(text, where, log)
        times = chosen.step_times_ms(text, str(log))
        if not times:
            source = "" if self.given else " (found in the first run's log)"
            raise RunFailed(f"{where}: no step times in its log {log}; tried {chosen.name}{source}")
        drop = self.warmup if self.warmup is not None else default_warmup(len(times))
        if len(times) <= drop:
            raise RunFailed(f"{where}: {len(times)} step times ({chosen.name}) leave none after warm-up {drop}; log: {log}")
        kept = sorted(times[drop:])
        self._note_short(where, len(kept), drop)
        figures: RunFigures = run_figures(kept)
        steps = RunSteps(
            run=run,
            arm=arm,
            repeat=repeat,
            steps_printed=len(times),
            warmup_dropped=drop,
            median_ms=figures.median,
            mean_ms=figures.mean,
            p95_ms=figures.p95,
            p99_ms=figures.p99,
            bank_sha256=bank_sha256,
            log=str(log),
        )
        return Measured(steps, kept)

    @property
    def format_name(self) -> str:
        assert self.format is not None, "no run has been read yet"
        return self.format.name

    def _format_for(self, text: str, where: str, log: Path) -> StepFormat:
        if self.format is None:
            self.format = detect_format([text])
            if self.format is None:
                tried = "; ".join(fmt.name for fmt in BUILT_IN)
                raise RunFailed(
                    f"{where}: no step times in its log {log}; tried {tried}; "
                    "give --step-pattern REGEX with one capture group, and --unit"
                )
        return self.format

    def _note_short(self, where: str, kept: int, drop: int) -> None:
        if kept >= MIN_STEPS:
            return
        if not self.short_runs:
            self.warn(
                f"{where} keeps {kept} step times after warm-up {drop}, fewer than {MIN_STEPS}: its figures rest on a few "
                "steps (P95 and P99 on its slowest ones), and compile-time steps may remain; run more steps or set --warmup"
            )
        self.short_runs.append(where)
