"""Whether a tuning run may start: faults no flag can wave through, then preflight with --skip and --force.

`--force` runs despite every failed check; `--skip CHECK` only despite the named ones. Neither can make a
missing script runnable or a bank that is a file into a directory: those are refused before preflight.
A bank directory that does not exist yet passes when aoe-runner can create it; it is created only once
the run is allowed to start, so a refused run leaves nothing behind.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from aoe_runner.errors import AoeRunnerError, ExitCode, InputError, UsageError
from aoe_runner.preflight.checks import CheckResult, Status
from aoe_runner.preflight.facts import HostFacts
from aoe_runner.preflight.plan import plan_for
from aoe_runner.preflight.report import PreflightReport, check_host
from aoe_runner.runs.manifest import PreflightOutcome
from aoe_runner.tune.request import TuneRequest

BANK_CHECK = "bank_path"


class PreflightFailed(AoeRunnerError):
    exit_code = ExitCode.FINDING


def refuse_unforcible(request: TuneRequest) -> None:
    """The faults no flag can wave through: a script that cannot run, a bank that is not a directory."""
    request.check_script()
    bank = request.bank
    if bank is not None and os.path.lexists(bank) and not bank.is_dir():
        raise InputError(str(bank), "the bank is not a directory; --force and --skip cannot change that")


@dataclass
class Gate:
    report: PreflightReport
    outcome: PreflightOutcome
    force: bool

    @property
    def refused(self) -> bool:
        return bool(self.outcome.failed) and not self.force

    def refusal(self) -> PreflightFailed:
        return PreflightFailed(
            f"preflight failed ({', '.join(self.outcome.failed)}): nothing was launched; fix these, "
            "or pass --skip CHECK for the ones you accept (--force for all)"
        )

    def verdict(self) -> str:
        """One line: what preflight says about this run."""
        outcome = self.outcome
        skipped = f"; skipped by --skip: {', '.join(outcome.skipped)}" if outcome.skipped else ""
        if outcome.failed:
            then = "the run would start anyway (--force)" if self.force else "the run would be refused"
            return f"preflight failed ({', '.join(outcome.failed)}): {then}{skipped}"
        if outcome.warned:
            return f"preflight passed with warnings ({', '.join(outcome.warned)}){skipped}"
        return f"preflight passed{skipped}"


def run_preflight(facts: HostFacts, request: TuneRequest, env: Mapping[str, str]) -> Gate:
    model_bytes = request.model.path.stat().st_size if request.model is not None else None
    plan = plan_for(request.mode.value, 1, request.model_memory, env, request.framework, model_bytes)
    report = check_host(facts, plan)
    if request.bank is not None and not request.bank.exists():
        report.checks = [_will_be_created(check, request.bank) if check.id == BANK_CHECK else check for check in report.checks]
    known = [check.id for check in report.checks]
    unknown = sorted(set(request.skip) - set(known))
    if unknown:
        raise UsageError(f"--skip: {', '.join(unknown)} is not a preflight check (one of {', '.join(known)})")
    counted = [check for check in report.checks if check.id not in request.skip]
    return Gate(
        report=report,
        outcome=PreflightOutcome(
            failed=[check.id for check in counted if check.status is Status.FAIL],
            warned=[check.id for check in counted if check.status is Status.WARN],
            skipped=[check.id for check in report.checks if check.id in request.skip and check.status in _PROBLEMS],
            forced=request.force and any(check.status is Status.FAIL for check in counted),
        ),
        force=request.force,
    )


_PROBLEMS = (Status.FAIL, Status.WARN)


def _will_be_created(check: CheckResult, bank: Path) -> CheckResult:
    """A missing --bank is no failure when aoe-runner can create it as the run starts."""
    ancestor = _nearest_existing(bank.absolute())
    if not (ancestor.is_dir() and os.access(ancestor, os.W_OK | os.X_OK)):
        return check
    return replace(
        check,
        status=Status.PASS,
        observed=f"{bank}: does not exist yet; aoe-runner creates it when the run starts (in {ancestor})",
        fix=None,
    )


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
