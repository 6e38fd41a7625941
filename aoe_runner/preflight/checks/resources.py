"""Checks of the host's resources against the documented formulas: disk, memory, CPUs, parallelism."""

from __future__ import annotations

import math
from typing import Any

from aoe_runner.frameworks.kinds import Scenario
from aoe_runner.preflight.checks.result import GIB, CheckResult, Status, size_text
from aoe_runner.preflight.checks.settings import cores_origin, run_loop, te_parallel_compiler, tuning_parallel_num
from aoe_runner.preflight.facts import HostFacts
from aoe_runner.preflight.history import HistoryUse
from aoe_runner.preflight.plan import Plan, TuneMode

MIN_HOME_FREE_BYTES = 20 * GIB  # the docs write 20G; read as df -h reads it, 20 GiB
OFFLINE_MEMORY_BYTES = 32 * GIB  # per offline AOE process (AOE.md §6: "32 GB", read as the 20G is)
WORKSPACE_PER_MODEL_BYTE = 20  # aoe_workspace/ takes 2-10 GB for a 500 MB model (AOE.md §5): up to 20 times its size


def check_disk_home(facts: HostFacts, plan: Plan) -> CheckResult:
    """The docs' 20 GB in the tuning user's home, plus what aoe-runner itself will write there for this run."""
    disk, history = facts.disk("home"), facts.history
    ours = history.next_run_bytes if history is not None and history.shares_home_filesystem else 0
    needed = MIN_HOME_FREE_BYTES + ours
    base: dict[str, Any] = {"id": "disk", "title": "free disk in home", "required": f">= {size_text(needed)}"}
    if disk is None or disk.free_bytes is None:
        return CheckResult(**base, status=Status.FAIL, observed="unknown", fix=f"make {facts.home} exist and be readable")
    sources = [f"shutil.disk_usage({disk.measured_at})"]
    formula = f"free({disk.measured_at}) = {size_text(disk.free_bytes)} >= 20 GiB (the docs' 20G)"
    observed = size_text(disk.free_bytes)
    if history is not None:
        held = "not counted" if history.held_bytes is None else size_text(history.held_bytes)
        if history.held_bytes is not None:
            observed += f"; aoe-runner's history holds {held}"
        sources.append(
            f"aoe-runner home {history.home}: {held} now, next run adds up to "
            f"{size_text(history.next_run_bytes)} (record and log, and bank contents not stored yet)"
        )
        if ours:
            formula += f" + {size_text(ours)} that aoe-runner will write"

    ok = disk.free_bytes >= needed
    elsewhere = _history_elsewhere_problem(history)
    fix = None
    if not ok:
        fix = f"free {size_text(needed - disk.free_bytes)} in {disk.measured_at} (or tune as another user)"
        if history is not None and history.held_bytes != 0:
            fix += "; 'aoe-runner runs prune --keep N --yes' gives back space the history holds"
    elif elsewhere:
        fix = elsewhere
    return CheckResult(
        **base,
        status=Status.PASS if ok and not elsewhere else Status.FAIL,
        observed=observed,
        formula=formula,
        sources=sources,
        fix=fix,
    )


def check_workspace_disk(facts: HostFacts, plan: Plan) -> CheckResult:
    """The offline CLI's aoe_workspace/, in the work directory: up to 20 times the model's size."""
    base: dict[str, Any] = {"id": "workspace", "title": "free disk for aoe_workspace"}
    if plan.model_file_bytes is None:
        return CheckResult(
            **base, status=Status.SKIP, required="-", observed="no model file", fix="only a model file's tuning has one"
        )
    needed = WORKSPACE_PER_MODEL_BYTE * plan.model_file_bytes
    disk = facts.disk("work") or facts.disk("home")  # saved facts may name the home alone
    base["required"] = f">= {size_text(needed)}"
    if disk is None or disk.free_bytes is None:
        return CheckResult(**base, status=Status.FAIL, observed="unknown", fix="make the work directory exist and be readable")
    ok = disk.free_bytes >= needed
    return CheckResult(
        **base,
        status=Status.PASS if ok else Status.FAIL,
        observed=size_text(disk.free_bytes),
        formula=f"free({disk.measured_at}) = {size_text(disk.free_bytes)} >= 20 x the model's {size_text(plan.model_file_bytes)}",
        sources=[f"shutil.disk_usage({disk.measured_at})", "aoe_workspace: 2-10 GB for a 500 MB model (AOE.md §5)"],
        fix=None if ok else f"free {size_text(needed - disk.free_bytes)} in {disk.measured_at}, or choose another --work-dir",
    )


def _history_elsewhere_problem(history: HistoryUse | None) -> str | None:
    """When the aoe-runner home is on another filesystem, it must hold the next run by itself."""
    if history is None or history.shares_home_filesystem or history.free_bytes is None:
        return None
    if history.free_bytes >= history.next_run_bytes:
        return None
    return (
        f"{history.home} has {size_text(history.free_bytes)} free, the next run writes up to "
        f"{size_text(history.next_run_bytes)}: free space there, prune ('aoe-runner runs prune'), or set AOE_RUNNER_HOME"
    )


def check_memory(facts: HostFacts, plan: Plan) -> CheckResult:
    tpn = tuning_parallel_num(facts)
    available = facts.available_memory_bytes
    base: dict[str, Any] = {"id": "memory", "title": "available memory", "observed": size_text(available)}
    if plan.scenario is not Scenario.TRAINING:
        return _offline_memory(facts, plan, base)
    if plan.model_memory_bytes is None:
        return CheckResult(
            **base,
            status=Status.SKIP,
            required="model memory x TUNING_PARALLEL_NUM",
            fix="pass --model-memory SIZE (what one training process needs) to check it",
        )
    if tpn.value is None:
        return CheckResult(
            **base,
            status=Status.SKIP,
            required="model memory x TUNING_PARALLEL_NUM",
            sources=[tpn.origin],
            fix="fix TUNING_PARALLEL_NUM first",
        )
    needed = plan.model_memory_bytes * tpn.value
    # facts saved before preflight read /proc/meminfo itself do not say: psutil measured them
    measured_by = facts.sources.get("available_memory_bytes", "psutil.virtual_memory().available")
    ok = available >= needed
    return CheckResult(
        **base,
        status=Status.PASS if ok else Status.FAIL,
        required=f">= {size_text(needed)}",
        formula=f"{size_text(available)} >= model memory {size_text(plan.model_memory_bytes)} x TUNING_PARALLEL_NUM {tpn.value}",
        sources=[measured_by, "--model-memory", tpn.origin],
        fix=None
        if ok
        else f"lower TUNING_PARALLEL_NUM in aoe.ini to {max(available // plan.model_memory_bytes, 1)} or free memory",
    )


def _offline_memory(facts: HostFacts, plan: Plan, base: dict[str, Any]) -> CheckResult:
    """The offline CLI's own need (AOE.md §6): 32 GB for its process, whatever the model."""
    available = facts.available_memory_bytes
    ok = available >= OFFLINE_MEMORY_BYTES
    return CheckResult(
        **base,
        status=Status.PASS if ok else Status.FAIL,
        required=f">= {size_text(OFFLINE_MEMORY_BYTES)}",
        formula=f"{size_text(available)} >= 32 GiB for the offline aoe process ({plan.scenario.value} scenario)",
        sources=[facts.sources.get("available_memory_bytes", "psutil.virtual_memory().available")],
        fix=None if ok else "free memory or tune on a larger host (more with large-shape operators)",
    )


def check_cpus(facts: HostFacts, plan: Plan) -> CheckResult:
    te, tpn = te_parallel_compiler(facts), tuning_parallel_num(facts)
    cores, p = facts.logical_cpus, plan.procs
    scenario = "" if plan.scenario is Scenario.TRAINING else f", {plan.scenario.value}"
    title = f"host CPUs ({plan.mode.value} tuning{scenario})"
    base: dict[str, Any] = {"id": "cpus", "title": title, "observed": str(cores)}
    for setting, highest in ((te, 32), (tpn, 64)):  # a value AOE refuses (0, 99, abc) cannot go into the formula
        if setting.value is None or not 1 <= setting.value <= highest:
            fix = f"fix {setting.name} first (an integer from 1 to {highest})"
            return CheckResult(**base, status=Status.SKIP, required="?", sources=[setting.origin], fix=fix)
    assert te.value is not None and tpn.value is not None
    needed = cpus_needed(plan, te.value, tpn.value, cores)
    rule = cpu_rule(plan, te.value, tpn.value, cores)
    needed_whole = math.ceil(needed)
    ok = cores >= needed_whole
    return CheckResult(
        **base,
        status=Status.PASS if ok else Status.FAIL,
        required=f">= {needed_whole}",
        formula=f"{rule} = {needed:g}",
        sources=[cores_origin(facts), te.origin, tpn.origin, f"P={p} (--procs)"],
        fix=None if ok else _cpu_fix(plan, te.value, tpn.value, cores),
    )


def cpus_needed(plan: Plan, te: int, tpn: int, cores: int) -> float:
    """The CPUs a host with `cores` CPUs needs for these settings: AOE.md §2.9 (op) and §2.10 (subgraph) in training,
    §6 for the offline CLI (one process; +1, and 58 in place of 50 for a PyTorch dump's --model_path)."""
    op = plan.mode is TuneMode.OP
    if plan.scenario is Scenario.TRAINING:
        return plan.procs * (te + tpn + min(cores / 2, 8) + 50) if op else plan.procs * (2 * tpn + te)
    if not op:
        return 2 * tpn + te + 1
    return te + tpn + 1 + min(cores / 2, 8) + (58 if plan.scenario is Scenario.PYTORCH else 50)


def cpu_rule(plan: Plan, te: int, tpn: int, cores: int) -> str:
    """cpus_needed's formula, written out with these values."""
    half = f"{min(cores / 2, 8):g}"
    if plan.scenario is Scenario.TRAINING:
        if plan.mode is TuneMode.OP:
            rule = "P x (TE_PARALLEL_COMPILER + TUNING_PARALLEL_NUM + min(cores/2, 8) + 50)"
            return rule + f" = {plan.procs} x ({te} + {tpn} + {half} + 50)"
        return f"P x (2 x TUNING_PARALLEL_NUM + TE_PARALLEL_COMPILER) = {plan.procs} x (2 x {tpn} + {te})"
    if plan.mode is TuneMode.SUBGRAPH:
        return f"2 x TUNING_PARALLEL_NUM + TE_PARALLEL_COMPILER + 1 = 2 x {tpn} + {te} + 1"
    extra = 58 if plan.scenario is Scenario.PYTORCH else 50
    return f"TE_PARALLEL_COMPILER + TUNING_PARALLEL_NUM + 1 + min(cores/2, 8) + {extra} = {te} + {tpn} + 1 + {half} + {extra}"


def _cpu_fix(plan: Plan, te: int, tpn: int, cores: int) -> str:
    """What would work: lower settings on this host when some are enough, else the host size that is."""
    as_set, lowest = _host_needed(plan, te, tpn), _host_needed(plan, 1, 1)
    if math.ceil(cpus_needed(plan, 1, 1, cores)) > cores:
        return (
            f"no setting makes {cores} CPUs enough: use a host with {as_set} CPUs, or {lowest} with "
            "TE_PARALLEL_COMPILER=1 and TUNING_PARALLEL_NUM=1"
        )
    # what the rest of the formula leaves the settings on this host
    budget = math.floor((cores - cpus_needed(plan, 0, 0, cores)) / plan.procs)
    if plan.mode is TuneMode.OP:
        settings = f"TE_PARALLEL_COMPILER + TUNING_PARALLEL_NUM to {budget} together (now {te + tpn})"
    else:
        settings = f"2 x TUNING_PARALLEL_NUM + TE_PARALLEL_COMPILER to {budget} (now {2 * tpn + te})"
    return f"lower {settings}, or use a host with {as_set} CPUs"


def _host_needed(plan: Plan, te: int, tpn: int) -> int:
    """The fewest CPUs a host needs for these settings (its own core count is in the op formula)."""
    cores = 1
    while cores < math.ceil(cpus_needed(plan, te, tpn, cores)):
        cores = math.ceil(cpus_needed(plan, te, tpn, cores))
    return cores


def check_te_parallel_compiler(facts: HostFacts, plan: Plan) -> CheckResult:
    te = te_parallel_compiler(facts)
    npus = len(facts.npus.devices)
    counted = max(npus, 1)
    limit = facts.logical_cpus * 0.8 / counted
    limit_whole = max(math.floor(limit), 1)
    required = f"integer in 1..32 and <= {min(limit_whole, 32)}"
    base: dict[str, Any] = {"id": "te_parallel_compiler", "title": "TE_PARALLEL_COMPILER", "required": required}
    npu_source = f"NPUs={npus} (/dev/davinci*)" + ("; counted as 1" if npus == 0 else "")
    sources = [te.origin, cores_origin(facts), npu_source]
    formula = (
        f"1 <= {te.written or te.value} <= 32 and <= cores x 80% / NPUs = {facts.logical_cpus} x 0.8 / {counted} = {limit:g}"
    )
    if te.value is None or not 1 <= te.value <= 32:
        return CheckResult(
            **base,
            status=Status.FAIL,
            observed=str(te.written),
            formula=formula,
            sources=sources,
            fix="export TE_PARALLEL_COMPILER=<an integer from 1 to 32>",
        )
    ok = te.value <= limit
    return CheckResult(
        **base,
        status=Status.PASS if ok else Status.FAIL,
        observed=str(te.value),
        formula=formula,
        sources=sources,
        fix=None if ok else f"export TE_PARALLEL_COMPILER={limit_whole}",
    )


def check_tuning_parallel_num(facts: HostFacts, plan: Plan) -> CheckResult:
    tpn = tuning_parallel_num(facts)
    advice = max(math.floor(facts.logical_cpus * 2 / 3), 1)
    base: dict[str, Any] = {
        "id": "tuning_parallel_num",
        "title": "TUNING_PARALLEL_NUM (aoe.ini)",
        "required": "integer in 1..64, about 2/3 of the cores",
    }
    sources = [tpn.origin, cores_origin(facts)] + [f"also found, not read: {path}" for path in facts.aoe_ini.also_found]
    if facts.aoe_ini.error:
        return CheckResult(
            **base, status=Status.FAIL, observed=facts.aoe_ini.error, sources=sources, fix="fix or remove the aoe.ini named"
        )
    if tpn.value is None or not 1 <= tpn.value <= 64:
        return CheckResult(
            **base,
            status=Status.FAIL,
            observed=str(tpn.written),
            sources=sources,
            fix=f"set TUNING_PARALLEL_NUM={advice} in {facts.aoe_ini.path}",
        )
    ok = tpn.value <= advice
    return CheckResult(
        **base,
        status=Status.PASS if ok else Status.WARN,
        observed=str(tpn.value),
        formula=f"{tpn.value} <= cores x 2/3 = {facts.logical_cpus} x 2/3 = {facts.logical_cpus * 2 / 3:g} (the docs' advice)",
        sources=sources,
        fix=None if ok else f"set TUNING_PARALLEL_NUM={advice} in aoe.ini",
    )


def check_run_loop(facts: HostFacts, plan: Plan) -> CheckResult:
    loop = run_loop(facts)
    base: dict[str, Any] = {"id": "run_loop", "title": "RUN_LOOP (aoe.ini)", "required": "integer in 1..2048, default 10"}
    if facts.aoe_ini.error:
        fix = "fix the aoe.ini that the TUNING_PARALLEL_NUM check names"
        return CheckResult(**base, status=Status.SKIP, observed="aoe.ini unreadable", fix=fix)
    ok = loop.value is not None and 1 <= loop.value <= 2048
    return CheckResult(
        **base,
        status=Status.PASS if ok else Status.FAIL,
        observed=loop.written.strip() if loop.written is not None else str(loop.value),
        sources=[loop.origin],
        fix=None if ok else f"set RUN_LOOP to an integer from 1 to 2048 (default 10) in {facts.aoe_ini.path}",
    )
