"""One preflight run: the facts, the plan, every check result, and what they add up to."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from aoe_runner.common.files import write_output
from aoe_runner.common.plain_data import FIELD_DOCSTRINGS
from aoe_runner.common.regular_files import path_kind, read_with_status
from aoe_runner.errors import ExitCode, InputError
from aoe_runner.frameworks.kinds import Framework
from aoe_runner.preflight.checks import CheckResult, Status, run_checks
from aoe_runner.preflight.facts import HostFacts, gather_facts
from aoe_runner.preflight.plan import Plan, plan_for


@dataclass(kw_only=True)
class PreflightReport:
    """`aoe-runner preflight --json`."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    schema_version: int = 1
    plan: Plan
    facts: HostFacts
    checks: list[CheckResult]

    def count(self, status: Status) -> int:
        return sum(check.status is status for check in self.checks)

    def exit_code(self, strict: bool = False) -> ExitCode:
        failing = self.count(Status.FAIL) + (self.count(Status.WARN) if strict else 0)
        return ExitCode.FINDING if failing else ExitCode.OK


def check_host(facts: HostFacts, plan: Plan) -> PreflightReport:
    return PreflightReport(plan=plan, facts=facts, checks=run_checks(facts, plan))


def load_facts(path: Path) -> HostFacts:
    """Facts saved by `--save-facts` on this or another host."""
    from pydantic import ValidationError

    from aoe_runner.common.jsontext import first_problem, load_json

    try:
        return load_json(HostFacts, read_with_status(str(path))[0])  # a FIFO is refused, not waited on
    except ValidationError as error:
        where, why = first_problem(error)
        problem = f"it has no field {where}" if why == "Field required" else f"{where or 'the top level'}: {why}"
        raise InputError(str(path), f"not host facts that --save-facts wrote ({problem})") from None


def refuse_unreadable_ini(path: Path) -> None:
    """An --aoe-ini that names no readable file is bad input (exit 4), not a finding about the host."""
    kind = path_kind(path)
    if kind is None:
        raise InputError(f"--aoe-ini {path}", "no such file")
    if kind == "directory":
        raise InputError(f"--aoe-ini {path}", "a directory, not an aoe.ini file")
    try:
        read_with_status(str(path), 0)  # opened without waiting: a FIFO is refused, not waited on
    except InputError as error:
        raise InputError(f"--aoe-ini {path}", error.reason) from None


def write_facts(facts: HostFacts, path: str | os.PathLike[str]) -> None:
    from aoe_runner.common.jsontext import dump_json  # here: json and msgspec load only when facts are written

    write_output(path, dump_json(facts))


def preflight_report(
    mode: str | None,
    processes: int,
    model_memory: str | None,
    aoe_ini: Path | None = None,
    soc: str | None = None,
    facts_file: Path | None = None,
    framework: Framework | None = None,
    model_file_bytes: int | None = None,
) -> PreflightReport:
    """The checks of a plan (mode, processes, model memory, and the scenario a framework or a model file's size
    implies) on this host as measured now, or on saved facts."""
    plan_for(mode, processes, model_memory, {}, framework, model_file_bytes)  # a usage error wins over bad input
    if aoe_ini is not None:
        refuse_unreadable_ini(aoe_ini)
    facts = load_facts(facts_file) if facts_file is not None else gather_facts(aoe_ini=aoe_ini, soc=soc)
    plan = plan_for(mode, processes, model_memory, facts.environment, framework, model_file_bytes)
    return check_host(facts, plan)
