"""What a verification rests on, with hashes: the script, each arm's bank, the tuning run's result files, the host."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from pydantic import BaseModel, Field

from aoe_runner.runs.manifest import BankInventory, Fingerprint, RecordedResult
from aoe_runner.verify.measure import Arm


class ArmEvidence(BaseModel):
    arm: Arm
    bank: str
    files: int = Field(description="Files and symlinks in the bank when the arm's first run started.")
    inventory_sha256: str = Field(
        description="sha256 of the bank's inventory as the arm's first run found it: the JSON list of [path, sha256 of "
        "the content, symlink target or null] of every file, sorted by path. The same bytes give the same hash."
    )
    unchanged: bool = Field(description="Every run of the arm found the same inventory.")


class ResultFileEvidence(BaseModel):
    path: str = Field(description="Where the tuning run's script wrote it.")
    sha256: str


class Evidence(BaseModel):
    script_sha256: str
    git_commit: str | None = Field(description="HEAD of the repository holding the script, if any.")
    banks: list[ArmEvidence] = Field(description="Baseline (the empty bank) and tuned.")
    result_files: list[ResultFileEvidence] = Field(description="The tuning run's result files (verify --run); else empty.")
    fingerprint: Fingerprint = Field(description="The environment every run ran in.")


def inventory_sha256(inventory: BankInventory) -> str:
    entries = sorted([file.path, file.sha256, file.link] for file in inventory.files)
    return hashlib.sha256(json.dumps(entries, separators=(",", ":")).encode("ascii")).hexdigest()


def arm_evidence(arm: Arm, bank: str, seen: Sequence[tuple[str, int]]) -> ArmEvidence:
    """seen: (inventory sha256, files) as each run of the arm found its bank, in order."""
    first_hash, files = seen[0]
    return ArmEvidence(
        arm=arm, bank=bank, files=files, inventory_sha256=first_hash, unchanged=all(h == first_hash for h, _ in seen)
    )


def result_files(recorded: Sequence[RecordedResult]) -> list[ResultFileEvidence]:
    return [ResultFileEvidence(path=result.source, sha256=result.sha256) for result in recorded]
