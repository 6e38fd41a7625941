"""Which verifications prove a bank: a `verify` whose tuned arm ran, every repeat, with exactly the bank's files
(the inventory hash its evidence records), and that passed: the tuned arm faster by its median's verdict and every
gate it was given passed."""

from __future__ import annotations

import os
from pathlib import Path

from aoe_runner.releases.version import Proof
from aoe_runner.runs.manifest import BankInventory
from aoe_runner.verify.evidence import inventory_sha256
from aoe_runner.verify.report import VerifyReport
from aoe_runner.verify.stats import Verdict

MAX_REPORT_BYTES = 64 << 20


def passing_proof(home: Path, run: str, bank: BankInventory) -> Proof | None:
    """The newest passing verification of exactly this bank (the run's bank as the run left it), if any."""
    wanted = inventory_sha256(bank)
    for report in reversed(_reports(home)):
        tuned = [arm for arm in report.evidence.banks if arm.arm == "tuned"]
        if not tuned or tuned[0].inventory_sha256 != wanted or not tuned[0].unchanged:
            continue
        if report.comparison.verdict is not Verdict.FASTER or not report.gates_passed:
            continue
        median = report.comparison.changes[0]
        gates = [f"{gate.gate} {gate.statistic} {gate.limit_pct:g}%" for gate in report.gates]
        return Proof(
            verification=report.verification, run=run, speedup=median.speedup, ci_low=median.ci_low,
            ci_high=median.ci_high, gates=gates,
        )  # fmt: skip
    return None


def _reports(home: Path) -> list[VerifyReport]:
    """Every verification's report this home holds, oldest first; one that cannot be read proves nothing."""
    root = home / "verifications"
    try:
        names = sorted(entry.name for entry in os.scandir(root) if entry.is_dir(follow_symlinks=False))
    except OSError:
        return []
    reports = []
    for name in names:
        path = root / name / "report.json"
        try:
            with open(path, "rb") as source:
                data = source.read(MAX_REPORT_BYTES + 1)
            if len(data) <= MAX_REPORT_BYTES:
                reports.append(VerifyReport.model_validate_json(data))
        except (OSError, ValueError):
            continue
    return reports
