"""The one normalised shape that every AOE result-file variant is read into.

Leaf records (one per tuned operator or subgraph, millions in a large corpus) are slotted dataclasses:
cheap to build, and pydantic still validates, dumps and describes them in JSON Schema. Everything
above them is a pydantic model.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field


class TuningStatus(str, Enum):
    SUCCESSFUL = "successful"
    FAILED = "failed"
    INCOMPLETE = "incomplete"


class UpdateMode(str, Enum):
    ADD = "add"
    UPDATE = "update"


def speedup_of(before: float, after: float) -> float | None:
    """before/after, or None when the after-time is not positive."""
    return before / after if after > 0 else None


class _TimedInMs:
    """speedup and time_saved_ms for anything with before_ms and after_ms (a dataclass or a pydantic model)."""

    __slots__ = ()
    if TYPE_CHECKING:
        before_ms: float
        after_ms: float

    @property
    def speedup(self) -> float | None:
        return speedup_of(self.before_ms, self.after_ms)

    @property
    def time_saved_ms(self) -> float:
        return self.before_ms - self.after_ms


@dataclass(slots=True)
class OperatorChange:
    """One operator whose strategy AOE added to or updated in the bank (times in µs)."""

    name: str
    op_types: tuple[str, ...]
    tuning_mode: str | None  # Format, Schedule or Impl; None in CANN 6.0 files
    before_us: float
    after_us: float
    update_mode: UpdateMode
    improvement_raw: str | None = None

    @property
    def speedup(self) -> float | None:
        return speedup_of(self.before_us, self.after_us)

    @property
    def time_saved_us(self) -> float:
        return self.before_us - self.after_us


@dataclass(slots=True)
class SubgraphChange(_TimedInMs):
    """One subgraph whose strategy AOE added to or updated in the bank (times in ms)."""

    repo_key: str
    before_ms: float
    after_ms: float
    update_mode: UpdateMode
    improvement_raw: str | None = None


@dataclass(slots=True)
class LegacyOperator:
    """One entry a legacy Auto Tune file (CANN 5.x and earlier) added to or updated in the bank.

    Its times are in the file's own unit, which the file does not state: never µs, never added to µs figures.
    """

    name: str  # the entry's key as written: "[Adam/mul_1]", or "[['scope/a', 'scope/b']]" for a fused group
    members: tuple[str, ...]  # the operator names in the key (several for a fused group)
    before: float
    after: float
    update_mode: UpdateMode

    @property
    def speedup(self) -> float | None:
        return speedup_of(self.before, self.after)

    @property
    def time_saved(self) -> float:
        return self.before - self.after


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelTimes(_Model, _TimedInMs):
    """Whole-model execution time before and after tuning (ms)."""

    before_ms: float
    after_ms: float
    improvement_raw: str | None = None


class RepoSummary(_Model):
    """AOE's own counts of strategies by bank outcome; missing counts stay None."""

    add: int | None = None
    hit: int | None = None
    reserved: int | None = None
    unsatisfied: int | None = None
    update: int | None = None
    total: int | None = None


class BasicInfo(_Model):
    tuning_name: str | None = None
    tuning_time_s: float | None = None  # absent when tuning was interrupted (coredump, OOM)


class OpatSection(_Model):
    status: TuningStatus | None = None
    status_raw: str | None = None
    model_times: ModelTimes | None = None  # offline CLI files only
    operators: list[OperatorChange] = Field(default_factory=list)
    repo_summary: RepoSummary | None = None
    failed_operators: list[str] = Field(default_factory=list)


class SgatSection(_Model):
    model_times: ModelTimes | None = None
    subgraphs: list[SubgraphChange] = Field(default_factory=list)
    repo_summary: RepoSummary | None = None


class LegacySection(_Model):
    """The entries of a legacy Auto Tune file (`tune_result_*.json`, CANN 5.x and earlier), read as one report."""

    unit: Literal["unknown"] = "unknown"  # the file does not state its time unit
    operators: list[LegacyOperator] = Field(default_factory=list)
    repo_summary: RepoSummary  # from each entry's bank_append / bank_hit / bank_reserved / bank_update flags
    status_only: int = 0  # entries with status_data and no result_data


class Report(_Model):
    """One tuning task: a `report_<timestamp>_<tid>` entry, or the whole list of an offline file."""

    key: str | None
    index: int  # position in its file, which keeps two reports with the same key apart
    timestamp: datetime | None = None  # parsed from the key
    thread_id: int | None = None
    basic: BasicInfo | None = None
    opat: OpatSection | None = None
    sgat: SgatSection | None = None
    legacy: LegacySection | None = None  # legacy Auto Tune files only


class ResultFile(_Model):
    path: str
    layout: Literal["training", "offline", "legacy_auto_tune"]
    partial: bool = False  # truncated or half-written: only its complete reports are here
    file_timestamp: datetime | None = None  # parsed from the file name
    modified: datetime | None = None  # the file's mtime, the last resort for ordering reports
    reports: list[Report] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
