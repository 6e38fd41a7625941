"""Checks of the AOE environment variables: mode, bank, device, work path, REPEAT_TUNE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aoe_runner.common.quantities import ascii_digits
from aoe_runner.frameworks.kinds import Scenario
from aoe_runner.preflight.checks.result import CheckResult, Status
from aoe_runner.preflight.facts import HostFacts, PathState, default_bank
from aoe_runner.preflight.npu_smi import A2, A3
from aoe_runner.preflight.plan import Plan, TuneMode

_ATLAS_A2_A3 = ("Ascend910B", "Ascend910_93")


def check_aoe_mode(facts: HostFacts, plan: Plan) -> CheckResult:
    written = facts.environment.get("AOE_MODE")
    base: dict[str, Any] = {
        "id": "aoe_mode",
        "title": "AOE_MODE",
        "required": f"unset, or {plan.mode.aoe_mode} for {plan.mode.value} tuning",
    }
    if plan.scenario is not Scenario.TRAINING:
        observed = "unset" if written is None else written
        return CheckResult(**base, status=Status.SKIP, observed=observed, fix="the offline CLI takes the mode as --job_type")
    if written is None:
        return CheckResult(**base, status=Status.PASS, observed="unset", sources=[f"mode: {plan.mode_source}"], fix=None)
    value = written.strip()
    if value == "4":
        return CheckResult(
            **base,
            status=Status.FAIL,
            observed=written,
            fix="4 is gradient tuning (GDAT), which needs a distributed script; use 2 (op) or 1 (subgraph)",
        )
    if value not in ("1", "2"):
        return CheckResult(
            **base, status=Status.FAIL, observed=written, fix="export AOE_MODE=2 (op tuning) or 1 (subgraph tuning)"
        )
    if value != plan.mode.aoe_mode:
        return CheckResult(
            **base,
            status=Status.WARN,
            observed=written,
            sources=[f"mode: {plan.mode_source}"],
            fix=f"AOE_MODE={value} disagrees with {plan.mode.value} mode; aoe-runner tune sets AOE_MODE={plan.mode.aoe_mode}",
        )
    return CheckResult(**base, status=Status.PASS, observed=written, sources=[f"mode: {plan.mode_source}"])


def check_mode_supported(facts: HostFacts, plan: Plan) -> CheckResult:
    """AOE refuses subgraph tuning on Atlas A2 and A3; npu-smi's A3 layout marks an A3 even when no SoC is named."""
    base: dict[str, Any] = {
        "id": "mode_supported",
        "title": "mode supported by the SoC",
        "required": "subgraph mode not on Atlas A2/A3 (Ascend910B*, Ascend910_93*)",
    }
    series = facts.npus.series if facts.npus.series in (A2, A3) else None
    if facts.soc is None and series is None:
        return CheckResult(
            **base, status=Status.SKIP, observed="SoC unknown", fix="pass --soc NAME (e.g. Ascend910B3) to check it"
        )
    a2_a3 = series or ("Atlas A2/A3" if facts.soc and facts.soc.startswith(_ATLAS_A2_A3) else None)
    refused = plan.mode is TuneMode.SUBGRAPH and a2_a3 is not None
    sources = [f"SoC from {facts.sources.get('soc', '?')}"]
    if series:
        names = ", ".join(sorted(set(facts.npus.chips)))
        sources.append(f"{series} from npu-smi info ({facts.npus.layout or 'no'} header layout; chip name {names})")
    return CheckResult(
        **base,
        status=Status.FAIL if refused else Status.PASS,
        observed=f"{plan.mode.value} on {facts.soc or f'{series}, exact SoC unknown'}",
        sources=sources,
        fix=f"use --mode op: {a2_a3} does not support subgraph tuning" if refused else None,
    )


def check_bank_path(facts: HostFacts, plan: Plan) -> CheckResult:
    state = facts.path_state("TUNE_BANK_PATH")
    base: dict[str, Any] = {
        "id": "bank_path",
        "title": "TUNE_BANK_PATH",
        "required": "an existing directory with read, write and execute permission",
    }
    if state is None:
        bank, rule = default_bank(facts.environment, facts.home, facts.soc, plan.mode.value)
        return CheckResult(
            **base,
            status=Status.PASS,
            observed=f"unset: AOE will use {bank}",
            sources=[f"AOE's priority: {rule}"],
            fix="set TUNE_BANK_PATH (or --bank) to keep the bank where you will find it again",
        )
    where = f"{state.written} -> {state.path}" if state.path != state.written else state.written
    sources = [f"TUNE_BANK_PATH={state.written}, relative to {facts.working_directory}"]
    problem = _directory_problem(state)
    if problem:
        return CheckResult(
            **base,
            status=Status.FAIL,
            observed=f"{where}: {problem}",
            sources=sources,
            fix=f"mkdir -p {state.path} && chmod u+rwx {state.path}",
        )
    landing = Path(state.path) / (facts.soc or "<soc_version>") if plan.mode is TuneMode.OP else Path(state.path)
    return CheckResult(
        **base, status=Status.PASS, observed=f"{where}; {plan.mode.value} bank lands in {landing}", sources=sources
    )


def _directory_problem(state: PathState) -> str | None:
    if not state.exists:
        return "does not exist"
    if not state.is_dir:
        return "is not a directory"
    if state.access != "rwx":
        return f"this user has only '{state.access or '-'}' of rwx"
    return None


def check_repeat_tune(facts: HostFacts, plan: Plan) -> CheckResult:
    written = facts.environment.get("REPEAT_TUNE")
    ok = written is None or written.strip() in ("True", "False")
    return CheckResult(
        id="repeat_tune",
        title="REPEAT_TUNE",
        required="True or False (default False)",
        status=Status.PASS if ok else Status.FAIL,
        observed="unset" if written is None else written,
        fix=None if ok else "export REPEAT_TUNE=True or REPEAT_TUNE=False",
    )


def check_device_id(facts: HostFacts, plan: Plan) -> CheckResult:
    written = facts.environment.get("ASCEND_DEVICE_ID")
    devices = facts.npus.devices
    text = (written or "0").strip()
    base: dict[str, Any] = {
        "id": "device_id",
        "title": "ASCEND_DEVICE_ID",
        "observed": "unset (0)" if written is None else written,
        "sources": [f"devices: {devices or 'none'} (/dev/davinci*)"],
    }
    if not ascii_digits(text):
        return CheckResult(**base, status=Status.FAIL, required="an integer", fix="export ASCEND_DEVICE_ID=<a device number>")
    if not devices:
        return CheckResult(**base, status=Status.SKIP, required="a device present", fix="no NPU to check it against")
    ok = int(text) in devices
    return CheckResult(
        **base,
        status=Status.PASS if ok else Status.FAIL,
        required=f"one of {devices}",
        fix=None if ok else f"export ASCEND_DEVICE_ID={devices[0]}",
    )


def check_work_path(facts: HostFacts, plan: Plan) -> CheckResult:
    state = facts.path_state("ASCEND_WORK_PATH")
    base: dict[str, Any] = {"id": "work_path", "title": "ASCEND_WORK_PATH", "required": "writable, or creatable"}
    if state is None:
        return CheckResult(
            **base, status=Status.PASS, observed=f"unset: results go to the working directory {facts.working_directory}"
        )
    if state.exists:
        ok = state.is_dir and "w" in state.access and "x" in state.access
        observed = f"{state.path} exists" + ("" if ok else " but is not a writable directory")
    else:
        ok = state.nearest_writable
        observed = f"{state.path} missing; {state.nearest_existing} is " + ("writable: creatable" if ok else "not writable")
    return CheckResult(
        **base,
        status=Status.PASS if ok else Status.FAIL,
        observed=observed,
        fix=None if ok else f"mkdir -p {state.path} as a user who may, or choose another ASCEND_WORK_PATH",
    )
