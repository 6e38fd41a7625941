"""The bank summary as pydantic models: the definition of `report`'s output and of its JSON Schema.

The command line writes the same summary from plain data (summary_data.py), which a test holds equal to these
models; a library caller gets them from `report.api.Loaded.summary`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from aoe_runner.report.legacy import LegacySummary
from aoe_runner.report.rules import SUMMARY_SCHEMA_VERSION
from aoe_runner.results.model import UpdateMode
from aoe_runner.results.report_facts import TimestampSource


class Provenance(BaseModel):
    file: str
    report_key: str | None
    report_index: int
    timestamp: datetime | None
    timestamp_source: TimestampSource


class _Entry(BaseModel):
    update_mode: UpdateMode
    improvement_raw: str | None
    speedup: float | None
    times_tuned: int
    source: Provenance
    conflict: str | None = None


class OperatorEntry(_Entry):
    name: str
    op_types: list[str]
    tuning_mode: str | None
    before_us: float
    after_us: float
    time_saved_us: float


class SubgraphEntry(_Entry):
    repo_key: str
    before_ms: float
    after_ms: float
    time_saved_ms: float


class OpTypeStats(BaseModel):
    op_type: str  # fused operators join their types with "+"
    entries: int
    time_saved_us: float
    median_speedup: float | None


class ModelPoint(BaseModel):
    section: Literal["OPAT", "SGAT"]
    tuning_name: str | None
    before_ms: float
    after_ms: float
    speedup: float | None
    source: Provenance


class RepoTotals(BaseModel):
    reports: int = 0
    add: int = 0
    hit: int = 0
    reserved: int = 0
    unsatisfied: int = 0
    update: int = 0
    total: int = 0

    @property
    def hit_rate(self) -> float | None:
        return self.hit / self.total if self.total else None


class FileInfo(BaseModel):
    path: str
    layout: str
    partial: bool
    reports: int
    warnings: list[str]


class Totals(BaseModel):
    files: int
    partial_files: int
    reports: int
    operators: int
    operators_added: int
    operators_updated: int
    subgraphs: int
    subgraphs_added: int
    subgraphs_updated: int
    operator_time_saved_us: float
    subgraph_time_saved_ms: float
    median_operator_speedup: float | None
    median_subgraph_speedup: float | None
    opat_repo: RepoTotals
    sgat_repo: RepoTotals
    opat_hit_rate: float | None
    sgat_hit_rate: float | None
    failed_reports: int
    incomplete_reports: int
    failed_operators: list[str]
    tuning_time_s: float
    reports_without_tuning_time: int


class BankSummary(BaseModel):
    """What `aoe-runner report` prints; `--format json` emits exactly this."""

    schema_version: int = SUMMARY_SCHEMA_VERSION
    min_gain_pct: float
    totals: Totals
    operators: list[OperatorEntry] = Field(description="sorted by time saved, largest first")
    subgraphs: list[SubgraphEntry] = Field(description="sorted by time saved, largest first")
    op_types: list[OpTypeStats]
    model_times: list[ModelPoint]
    no_real_gain: list[str] = Field(description="keys of entries whose speed-up is below min_gain_pct")
    conflicts: list[str] = Field(description="keys of entries whose latest result contradicts an earlier one")
    files: list[FileInfo]
    legacy: LegacySummary | None = Field(
        default=None, exclude_if=lambda value: value is None, description="legacy Auto Tune files only (time unit unknown)"
    )


def operator_label(entry: OperatorEntry) -> str:
    mode = f" ({entry.tuning_mode})" if entry.tuning_mode else ""
    return f"{entry.name} [{'+'.join(entry.op_types)}]{mode}"


def subgraph_label(entry: SubgraphEntry) -> str:
    return f"subgraph {entry.repo_key}"
