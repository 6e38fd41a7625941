"""The run manifest: everything recorded about one tuning run, written at its start and at its end."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from aoe_runner.modes import TuneMode
from aoe_runner.preflight.facts import HostFacts
from aoe_runner.runs.status import RunStatus

LOG_NAME = "log.txt"
SCHEMA_VERSION = 1


class Fingerprint(BaseModel):
    """What must match for two runs' results to be comparable."""

    cann_version: str | None = Field(description="The release (8.1.RC1); runs recorded before 0.2 may hold the inner number.")
    cann_inner_version: str | None = Field(None, description="The inner build number (7.7.0.1.238), when known.")
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


class BankFile(BaseModel):
    """A file of a bank, or a symlink in it: recorded with its target, never followed."""

    path: str = Field(description="Relative to the bank directory.")
    size: int = Field(description="Bytes; for a symlink, the length of its target.")
    sha256: str = Field(description="Of the content; for a symlink, of its target.")
    mode: int | None = Field(None, description="Permission bits (420 is 0o644); None for a symlink, or when not recorded.")
    link: str | None = Field(None, description="The target of a symlink, as written; None for a file.")
    mtime_ns: int | None = Field(
        None,
        description="Modification time when listed: with size and inode, how an unchanged file is recognised without reading it.",
    )
    inode: int | None = None

    def differs_from(self, other: BankFile) -> bool:
        """Content, kind or target differ, or modes that both sides recorded."""
        if (self.sha256, self.link) != (other.sha256, other.link):
            return True
        return None not in (self.mode, other.mode) and self.mode != other.mode


class BankInventory(BaseModel):
    directory: str
    exists: bool
    files: list[BankFile] = Field(default_factory=list)
    directories: list[str] | None = Field(
        None, description="Every subdirectory, relative to the bank; None in records made before they were listed."
    )
    taken_at: datetime
    stored: str | None = Field(
        None,
        description="Id of the full inventory in the aoe-runner home's inventories/; files and directories are then "
        "not repeated here.",
    )
    file_count: int | None = Field(None, description="Files and symlinks, when the inventory is stored.")
    stored_bytes: int | None = Field(None, description="Their total size, when the inventory is stored.")

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


class BankChanges(BaseModel):
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    modified: list[str] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.modified)


class MarkerSeen(BaseModel):
    """An AOE log line that shows tuning switched on or finished."""

    kind: str = Field(description="tuning_on, operator_finished or tuning_finished.")
    first_line: str
    first_seen_at: datetime
    count: int


class CodeSeen(BaseModel):
    """An AOE or CANN error code in the run's output, with what it means and what to try next."""

    code: str = Field(description="e.g. EG0013, WG0000, EZ3003.")
    meaning: str
    next_step: str
    preflight_check: str | None = Field(None, description="The preflight check that looks at the same thing.")
    first_line: str
    first_seen_at: datetime
    count: int


class Progress(BaseModel):
    reports: int = 0
    operators_added: int = 0
    operators_updated: int = 0
    subgraphs_added: int = 0
    subgraphs_updated: int = 0
    failures: int = Field(0, description="Failed operators plus reports whose tuning failed.")

    def plus(self, other: Progress) -> Progress:
        return Progress(**{name: getattr(self, name) + getattr(other, name) for name in Progress.model_fields})

    def describe(self) -> str:
        from aoe_runner.render.words import count

        parts = [
            count(self.reports, "report"),
            f"operators +{self.operators_added} added, {self.operators_updated} updated",
        ]
        if self.subgraphs_added or self.subgraphs_updated:
            parts.append(f"subgraphs +{self.subgraphs_added} added, {self.subgraphs_updated} updated")
        parts.append(count(self.failures, "failure"))
        return ", ".join(parts)


class RecordedResult(BaseModel):
    """One result file the run wrote, as found at its end."""

    source: str = Field(description="Where the script wrote it.")
    recorded: str = Field(description="The copy in the run record, relative to the run directory.")
    size: int
    sha256: str
    reports: int
    partial: bool = Field(description="Truncated or half-written: only its complete reports count.")
    error: str | None = Field(None, description="Why nothing in it could be read, if so.")


class PreflightOutcome(BaseModel):
    failed: list[str] = Field(default_factory=list, description="Names of the checks that failed.")
    warned: list[str] = Field(default_factory=list)
    forced: bool = Field(False, description="Launched despite failures (--force).")
    skipped: list[str] = Field(
        default_factory=list, description="Checks that failed or warned but were skipped by --skip, so they did not count."
    )


class VerifyLink(BaseModel):
    """Where a `verify` run belongs: which verification, which arm, which repeat, which tuning run."""

    verification: str
    arm: Literal["baseline", "tuned"]
    repeat: int
    tuning_run: str | None = None


class RunManifest(BaseModel):
    """`manifest.json` of one run; `aoe-runner runs show RUN --json` prints it."""

    schema_version: int = SCHEMA_VERSION
    id: str
    kind: Literal["tune", "verify"] = "tune"
    status: RunStatus
    script: str = Field(description="Absolute path of the training script.")
    script_sha256: str
    git_commit: str | None = Field(None, description="HEAD of the repository holding the script, if any.")
    git_script_modified: bool | None = Field(None, description="The script differs from that commit.")
    command: list[str] = Field(description="The exact argv that was started, with no shell.")
    arguments: list[str]
    working_directory: str
    mode: TuneMode | None = Field(description="The tuning mode; None for a verify run, which tunes nothing.")
    device: int
    environment: dict[str, str] = Field(description="The variables aoe-runner set or changed for the script.")
    environment_removed: list[str] = Field(default_factory=list, description="Variables aoe-runner removed.")
    bank: str
    work_dir: str
    timeout_s: float | None = None
    fingerprint: Fingerprint
    facts: HostFacts
    preflight: PreflightOutcome | None = Field(None, description="None for a verify run: it runs no preflight.")
    verify: VerifyLink | None = None
    supervisor_pid: int
    child_pid: int | None = None
    started_at: datetime
    ended_at: datetime | None = None
    exit_code: int | None = Field(None, description="What `aoe-runner tune` exited with.")
    script_exit_code: int | None = Field(None, description="The script's own code, when it exited.")
    script_signal: str | None = Field(None, description="The signal that ended the script, when one did.")
    stopped_by: str | None = Field(None, description="Why aoe-runner stopped the script: SIGINT, SIGTERM or timeout.")
    markers: list[MarkerSeen] = Field(default_factory=list)
    aoe_codes: list[CodeSeen] = Field(default_factory=list, description="AOE/CANN error codes the output showed.")
    progress: Progress = Field(default_factory=Progress)
    result_files: list[RecordedResult] = Field(default_factory=list)
    bank_before: BankInventory
    bank_after: BankInventory | None = None
    bank_changes: BankChanges | None = None
    log: str = LOG_NAME
    warnings: list[str] = Field(
        default_factory=list,
        description="What went wrong around the script without stopping it: unreadable result files, a terminal that "
        "stopped reading, a full disk.",
    )
    leftover_processes: list[str] = Field(
        default_factory=list, description="Processes that outlived the script and were stopped by aoe-runner."
    )
    late_signal: str | None = Field(
        None, description="A signal that arrived after the script ended, while the run was being recorded."
    )

    @property
    def mode_label(self) -> str:
        """op or subgraph for a tuning run, verify:baseline or verify:tuned for a verify run."""
        if self.mode is not None:
            return self.mode.value
        return f"verify:{self.verify.arm}" if self.verify else "verify"

    @property
    def duration_s(self) -> float | None:
        return (self.ended_at - self.started_at).total_seconds() if self.ended_at else None
