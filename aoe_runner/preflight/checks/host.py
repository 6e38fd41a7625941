"""Checks of the host's set-up: CANN, NPU, pciutils, CPU binding, multi-device, profiling, static memory, the device lock."""

from __future__ import annotations

from typing import Any

from aoe_runner.common.quantities import ascii_whole
from aoe_runner.frameworks.kinds import Framework, Scenario
from aoe_runner.preflight.checks.result import CheckResult, Status
from aoe_runner.preflight.facts import MULTI_DEVICE_VARIABLES, PROFILING_VARIABLES, HostFacts
from aoe_runner.preflight.plan import Plan

# The CANN 6.0.1 TensorFlow guide, on GE_USE_STATIC_MEMORY: turn static memory allocation off when tuning with AOE.
CANN_601_STATIC_MEMORY = "https://www.hiascend.com/document/detail/zh/canncommercial/601/modeldev/tfmigr1/tfmigr1_000033.html"
STATIC_MEMORY_REFERENCE = (
    f"CANN 6.0.1 training guide, GE_USE_STATIC_MEMORY ({CANN_601_STATIC_MEMORY}): static memory allocation off when "
    "tuning with AOE, i.e. GE_USE_STATIC_MEMORY=0 (AOE.md §5); training-tuning guide: static_memory_policy=0 (AOE.md §2.5)"
)
MULTI_DEVICE_REFERENCE = (
    "training-tuning guide (seeds/aoe-training-tuning.zh.txt): 不支持多P场景下的调优, no tuning with multiple devices "
    "(AOE.md §2.6); the CANN 6.0.1 training-tuning page says the same (AOE.md §5)"
)


def check_cann(facts: HostFacts, plan: Plan) -> CheckResult:
    cann = facts.cann
    base: dict[str, Any] = {"id": "cann", "title": "CANN environment", "required": "set_env.sh sourced (ASCEND_TOOLKIT_HOME set)"}
    version = f", CANN {cann.describe()}" if cann.version else ""
    if cann.toolkit_home:
        return CheckResult(
            **base, status=Status.PASS, observed=f"{cann.toolkit_home}{version}", sources=[cann.version_file or "no version file"]
        )
    if cann.set_env_scripts:
        return CheckResult(
            **base,
            status=Status.FAIL,
            observed=f"not sourced; found {cann.set_env_scripts[0]}{version}",
            fix=f"source {cann.set_env_scripts[0]}",
        )
    return CheckResult(
        **base,
        status=Status.FAIL,
        observed="not installed (no set_env.sh at /usr/local/Ascend or ~/Ascend)",
        fix="install the CANN toolkit, then source its set_env.sh",
    )


def check_npu(facts: HostFacts, plan: Plan) -> CheckResult:
    npus = facts.npus
    smi = f"; npu-smi: {npus.describe()}" if npus.npu_smi else "; npu-smi not found"
    ok = bool(npus.devices)
    return CheckResult(
        id="npu",
        title="NPU present",
        required="/dev/davinci<N>",
        status=Status.PASS if ok else Status.FAIL,
        observed=(f"/dev/davinci{npus.devices}" if ok else "no /dev/davinci*") + smi,
        fix=None if ok else "run on a host (or container) with an Ascend NPU and its driver",
    )


def check_lspci(facts: HostFacts, plan: Plan) -> CheckResult:
    ok = facts.lspci is not None
    base: dict[str, Any] = {"id": "lspci", "title": "lspci (pciutils, for MindSpore)", "required": "on PATH"}
    if plan.framework not in (None, Framework.MINDSPORE) or plan.scenario is not Scenario.TRAINING:
        return CheckResult(**base, status=Status.SKIP, observed=facts.lspci or "not found", fix="only MindSpore needs it")
    return CheckResult(
        **base,
        status=Status.PASS if ok else Status.WARN,
        observed=facts.lspci or "not found",
        fix=None if ok else "install pciutils (MindSpore needs it; other frameworks do not)",
    )


def check_cpu_binding(facts: HostFacts, plan: Plan) -> CheckResult:
    allowed = facts.affinity_cpus
    base: dict[str, Any] = {
        "id": "cpu_binding",
        "title": "no CPU binding",
        "required": f"affinity = all {facts.logical_cpus} CPUs",
    }
    if allowed is None:
        return CheckResult(**base, status=Status.SKIP, observed="unknown on this OS")
    ok = allowed >= facts.logical_cpus
    return CheckResult(
        **base,
        status=Status.PASS if ok else Status.FAIL,
        observed=f"{allowed} CPUs allowed",
        sources=[facts.sources.get("affinity_cpus", "")],
        fix=None if ok else "run without taskset/numactl pinning or a restricted cpuset",
    )


def _not_offline(check_id: str, title: str, plan: Plan) -> CheckResult | None:
    """A training precondition does not apply to a model file tuned by the offline CLI: skipped, saying so."""
    if plan.scenario is not Scenario.OFFLINE:
        return None
    return CheckResult(
        id=check_id, title=title, required="-", status=Status.SKIP, observed="a model file", fix="applies to training scripts"
    )


def check_multi_device(facts: HostFacts, plan: Plan) -> CheckResult:
    skipped = _not_offline("multi_device", "single device", plan)
    if skipped:
        return skipped
    hints = [f"{name}={facts.environment[name]}" for name in MULTI_DEVICE_VARIABLES if _multi(name, facts.environment.get(name))]
    return CheckResult(
        id="multi_device",
        title="single device",
        required="RANK_SIZE/WORLD_SIZE <= 1, no RANK_TABLE_FILE",
        status=Status.FAIL if hints else Status.PASS,
        observed=", ".join(hints) or "no multi-device variables",
        fix="tune on one device: unset " + ", ".join(h.split("=")[0] for h in hints) if hints else None,
        reference=MULTI_DEVICE_REFERENCE,
    )


def _multi(name: str, value: str | None) -> bool:
    if not value:
        return False
    if name == "RANK_TABLE_FILE":
        return True
    count = ascii_whole(value)
    return count is None or count > 1


def check_profiling(facts: HostFacts, plan: Plan) -> CheckResult:
    skipped = _not_offline("profiling", "profiling off", plan)
    if skipped:
        return skipped
    env = facts.environment
    on = [name for name in PROFILING_VARIABLES if env.get(name) and env[name].strip().lower() not in ("false", "0", "off")]
    return CheckResult(
        id="profiling",
        title="profiling off",
        required="no profiling variables set",
        status=Status.FAIL if on else Status.PASS,
        observed=", ".join(f"{n}={env[n]}" for n in on) or "off",
        fix="unset " + " ".join(on) if on else None,
    )


def check_static_memory(facts: HostFacts, plan: Plan) -> CheckResult:
    skipped = _not_offline("static_memory", "GE_USE_STATIC_MEMORY", plan)
    if skipped:
        return skipped
    written = facts.environment.get("GE_USE_STATIC_MEMORY")
    ok = written is None or written.strip() == "0"
    return CheckResult(
        id="static_memory",
        title="GE_USE_STATIC_MEMORY",
        required="unset or 0 (static memory off)",
        status=Status.PASS if ok else Status.FAIL,
        observed="unset (0, dynamic allocation)" if written is None else written,
        fix=None if ok else "export GE_USE_STATIC_MEMORY=0 (or unset it) while tuning",
        reference=STATIC_MEMORY_REFERENCE,
    )


def check_device_free(facts: HostFacts, plan: Plan) -> CheckResult:
    holder = facts.device_lock_holder
    device = facts.environment.get("ASCEND_DEVICE_ID", "0")
    if facts.device_lock_problem:
        return CheckResult(
            id="device_free",
            title="device not being tuned",
            required="a usable device lock, held by no other run",
            status=Status.FAIL,
            observed=f"device {device}: the lock cannot be used: {facts.device_lock_problem}",
            fix="remove what it names, or set AOE_RUNNER_LOCK_DIR to a directory owned by root or by you",
        )
    return CheckResult(
        id="device_free",
        title="device not being tuned",
        required="no other aoe-runner run holds it",
        status=Status.FAIL if holder else Status.PASS,
        observed=f"device {device} held by {holder.describe()}" if holder else f"device {device} free",
        fix="wait for that run, or tune another device (ASCEND_DEVICE_ID / --device)" if holder else None,
    )
