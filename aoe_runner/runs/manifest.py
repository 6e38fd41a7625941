"""The run manifest: everything recorded about one tuning run, written at its start and at its end."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Literal

from aoe_runner.common.modes import TuneMode
from aoe_runner.common.plain_data import FIELD_DOCSTRINGS
from aoe_runner.preflight.facts import HostFacts
from aoe_runner.runs.flows import CampaignLink, Count, OfflineRecord, PhaseRecord, SwitchRecord
from aoe_runner.runs.status import RunStatus

LOG_NAME = "log.txt"
SCHEMA_VERSION = 1


def check_moments(*moments: datetime | None) -> None:
    """Refuse a moment that cannot be told in UTC (year 1 at +05:00, say): a hand-edited record, never a real run."""
    for moment in moments:
        if moment is not None:
            try:
                _aware(moment).astimezone(timezone.utc)
            except OverflowError:
                raise ValueError(f"{moment.isoformat()} cannot be told in UTC") from None


@dataclass(kw_only=True)
class Fingerprint:
    """What must match for two runs' results to be comparable."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    cann_version: str | None
    """The release (8.1.RC1); runs recorded before 0.2 may hold the inner number."""
    cann_inner_version: str | None = None
    """The inner build number (7.7.0.1.238), when known."""
    soc: str | None
    driver_version: str | None = None
    python: str
    hostname: str

    def drift_from(self, other: Fingerprint) -> list[str]:
        """The comparable-environment differences, e.g. ['CANN version 8.0.0 != 8.1.RC1']."""
        differences = []
        if not self._same_cann(other):
            differences.append(f"CANN version {self.cann_version or 'unknown'} != {other.cann_version or 'unknown'}")
        for label, mine, theirs in (("SoC", self.soc, other.soc), ("driver version", self.driver_version, other.driver_version)):
            if mine != theirs:
                differences.append(f"{label} {mine or 'unknown'} != {theirs or 'unknown'}")
        return differences

    def _same_cann(self, other: Fingerprint) -> bool:
        """Equal releases, or one run's inner number as the other's version (recorded before releases were read)."""
        mine = {self.cann_version, self.cann_inner_version} - {None}
        theirs = {other.cann_version, other.cann_inner_version} - {None}
        if self.cann_version == other.cann_version:
            return True
        return bool(mine and theirs) and (self.cann_version in theirs or other.cann_version in mine)


@dataclass(kw_only=True)
class BankFile:
    """A file of a bank, or a symlink in it: recorded with its target, never followed."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    path: str
    """Relative to the bank directory."""
    size: Count
    """Bytes; for a symlink, the length of its target."""
    sha256: str
    """Of the content; for a symlink, of its target."""
    mode: int | None = None
    """Permission bits (420 is 0o644); None for a symlink, or when not recorded."""
    link: str | None = None
    """The target of a symlink, as written; None for a file."""
    mtime_ns: int | None = None
    """Modification time when listed: with size and inode, how an unchanged file is recognised without reading it."""
    inode: int | None = None

    def differs_from(self, other: BankFile) -> bool:
        """Content, kind or target differ, or modes that both sides recorded."""
        if (self.sha256, self.link) != (other.sha256, other.link):
            return True
        return None not in (self.mode, other.mode) and self.mode != other.mode


@dataclass(kw_only=True)
class BankInventory:
    __pydantic_config__ = FIELD_DOCSTRINGS

    directory: str
    exists: bool
    files: list[BankFile] = field(default_factory=list)
    directories: list[str] | None = None
    """Every subdirectory, relative to the bank; None in records made before they were listed."""
    taken_at: datetime
    stored: str | None = None
    """Id of the full inventory in the aoe-runner home's inventories/; files and directories are then not repeated here."""
    file_count: Count | None = None
    """Files and symlinks, when the inventory is stored."""
    stored_bytes: Count | None = None
    """Their total size, when the inventory is stored."""

    def __post_init__(self) -> None:
        check_moments(self.taken_at)

    @property
    def total_bytes(self) -> int:
        return self.stored_bytes if self.stored is not None and self.stored_bytes is not None else sum(f.size for f in self.files)

    @property
    def count(self) -> int:
        return self.file_count if self.stored is not None and self.file_count is not None else len(self.files)

    @property
    def symlinks(self) -> list[BankFile]:
        return [file for file in self.files if file.link is not None]

    def by_path(self) -> dict[str, BankFile]:
        return {file.path: file for file in self.files}


@dataclass(kw_only=True)
class BankChanges:
    __pydantic_config__ = FIELD_DOCSTRINGS

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.modified)


@dataclass(kw_only=True)
class MarkerSeen:
    """An AOE log line that shows tuning switched on or finished."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    kind: str
    """tuning_on, operator_finished or tuning_finished."""
    first_line: str
    first_seen_at: datetime
    count: Count

    def __post_init__(self) -> None:
        check_moments(self.first_seen_at)


@dataclass(kw_only=True)
class CodeSeen:
    """An AOE or CANN error code in the run's output, with what it means and what to try next."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    code: str
    """e.g. EG0013, WG0000, EZ3003."""
    meaning: str
    next_step: str
    preflight_check: str | None = None
    """The preflight check that looks at the same thing."""
    first_line: str
    first_seen_at: datetime
    count: Count

    def __post_init__(self) -> None:
        check_moments(self.first_seen_at)


@dataclass(kw_only=True)
class Progress:
    __pydantic_config__ = FIELD_DOCSTRINGS

    reports: Count = 0
    operators_added: Count = 0
    operators_updated: Count = 0
    subgraphs_added: Count = 0
    subgraphs_updated: Count = 0
    failures: Count = 0
    """Failed operators plus reports whose tuning failed."""

    def plus(self, other: Progress) -> Progress:
        return Progress(**{part.name: getattr(self, part.name) + getattr(other, part.name) for part in fields(Progress)})

    def describe(self) -> str:
        from aoe_runner.common.words import count

        parts = [
            count(self.reports, "report"),
            f"operators +{self.operators_added} added, {self.operators_updated} updated",
        ]
        if self.subgraphs_added or self.subgraphs_updated:
            parts.append(f"subgraphs +{self.subgraphs_added} added, {self.subgraphs_updated} updated")
        parts.append(count(self.failures, "failure"))
        return ", ".join(parts)


@dataclass(kw_only=True)
class RecordedResult:
    """One result file the run wrote, as found at its end."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    source: str
    """Where the script wrote it."""
    recorded: str
    """The copy in the run record, relative to the run directory."""
    size: Count
    sha256: str
    reports: Count
    partial: bool
    """Truncated or half-written: only its complete reports count."""
    error: str | None = None
    """Why nothing in it could be read, if so."""


@dataclass(kw_only=True)
class PreflightOutcome:
    __pydantic_config__ = FIELD_DOCSTRINGS

    failed: list[str] = field(default_factory=list)
    """Names of the checks that failed."""
    warned: list[str] = field(default_factory=list)
    forced: bool = False
    """Launched despite failures (--force)."""
    skipped: list[str] = field(default_factory=list)
    """Checks that failed or warned but were skipped by --skip, so they did not count."""


@dataclass(kw_only=True)
class VerifyLink:
    """Where a `verify` run belongs: which verification, which arm, which repeat, which tuning run."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    verification: str
    arm: Literal["baseline", "tuned"]
    repeat: int
    tuning_run: str | None = None


@dataclass(kw_only=True)
class RunManifest:
    """`manifest.json` of one run; `aoe-runner runs show RUN --json` prints it."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    schema_version: int = SCHEMA_VERSION
    id: str
    kind: Literal["tune", "verify"] = "tune"
    status: RunStatus
    script: str
    """Absolute path of the training script."""
    script_sha256: str
    git_commit: str | None = None
    """HEAD of the repository holding the script, if any."""
    git_script_modified: bool | None = None
    """The script differs from that commit."""
    command: list[str]
    """The exact argv that was started, with no shell."""
    arguments: list[str]
    working_directory: str
    mode: TuneMode | None
    """The tuning mode; None for a verify run, which tunes nothing."""
    device: int
    environment: dict[str, str]
    """The variables aoe-runner set or changed for the script."""
    environment_removed: list[str] = field(default_factory=list)
    """Variables aoe-runner removed."""
    bank: str
    work_dir: str
    timeout_s: float | None = None
    fingerprint: Fingerprint
    facts: HostFacts
    preflight: PreflightOutcome | None = None
    """None for a verify run: it runs no preflight."""
    verify: VerifyLink | None = None
    supervisor_pid: int
    child_pid: int | None = None
    started_at: datetime
    ended_at: datetime | None = None
    exit_code: int | None = None
    """What `aoe-runner tune` exited with."""
    script_exit_code: int | None = None
    """The script's own code, when it exited."""
    script_signal: str | None = None
    """The signal that ended the script, when one did."""
    stopped_by: str | None = None
    """Why aoe-runner stopped the script: SIGINT, SIGTERM or timeout."""
    markers: list[MarkerSeen] = field(default_factory=list)
    aoe_codes: list[CodeSeen] = field(default_factory=list)
    """AOE/CANN error codes the output showed."""
    progress: Progress = field(default_factory=Progress)
    result_files: list[RecordedResult] = field(default_factory=list)
    bank_before: BankInventory
    bank_after: BankInventory | None = None
    bank_changes: BankChanges | None = None
    log: str = LOG_NAME
    warnings: list[str] = field(default_factory=list)
    """What went wrong around the script without stopping it: unreadable result files, a terminal that stopped reading, a full disk."""  # noqa: E501
    leftover_processes: list[str] = field(default_factory=list)
    """Processes that outlived the script and were stopped by aoe-runner."""
    late_signal: str | None = None
    """A signal that arrived after the script ended, while the run was being recorded."""
    framework: str | None = None
    """tf, mindspore or pytorch: how AOE was switched on; None for a model file and for records before it was kept."""
    framework_source: str | None = None
    """How the framework was chosen: --framework, or the script's imports."""
    switch: SwitchRecord | None = None
    """The framework call made before the script ran (MindSpore, PyTorch); None where variables do it (TensorFlow)."""
    phases: list[PhaseRecord] = field(default_factory=list)
    """Each supervised process in order: the script alone, or a PyTorch dump then the offline CLI."""
    offline: OfflineRecord | None = None
    """A model file tuned by the offline CLI (`tune --model`)."""
    campaign: CampaignLink | None = None
    """The campaign job this run was started for."""

    def __post_init__(self) -> None:
        """aoe-runner writes UTC; a time without a zone (a hand-edited record) is read as UTC too, not compared raw."""
        check_moments(self.started_at, self.ended_at)
        self.started_at = _aware(self.started_at)
        self.ended_at = _aware(self.ended_at) if self.ended_at is not None else None

    @property
    def mode_label(self) -> str:
        """op or subgraph for a tuning run, verify:baseline or verify:tuned for a verify run."""
        if self.mode is not None:
            return self.mode.value
        return f"verify:{self.verify.arm}" if self.verify else "verify"

    @property
    def duration_s(self) -> float | None:
        return (self.ended_at - self.started_at).total_seconds() if self.ended_at else None


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
