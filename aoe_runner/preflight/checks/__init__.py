"""The preflight checks: pure functions of (host facts, plan), one per documented precondition (AOE.md §1–§2, §5)."""

from __future__ import annotations

from collections.abc import Callable

from aoe_runner.preflight.checks.host import (
    check_cann,
    check_cpu_binding,
    check_device_free,
    check_lspci,
    check_multi_device,
    check_npu,
    check_profiling,
    check_static_memory,
)
from aoe_runner.preflight.checks.resources import (
    check_cpus,
    check_disk_home,
    check_memory,
    check_run_loop,
    check_te_parallel_compiler,
    check_tuning_parallel_num,
    check_workspace_disk,
)
from aoe_runner.preflight.checks.result import CheckResult, Status
from aoe_runner.preflight.checks.variables import (
    check_aoe_mode,
    check_bank_path,
    check_device_id,
    check_mode_supported,
    check_repeat_tune,
    check_work_path,
)
from aoe_runner.preflight.facts import HostFacts
from aoe_runner.preflight.plan import Plan

__all__ = ["ALL_CHECKS", "CheckResult", "Status", "run_checks"]

Check = Callable[[HostFacts, Plan], CheckResult]
ALL_CHECKS: tuple[Check, ...] = (
    check_disk_home,
    check_workspace_disk,
    check_memory,
    check_cpus,
    check_te_parallel_compiler,
    check_tuning_parallel_num,
    check_run_loop,
    check_aoe_mode,
    check_mode_supported,
    check_bank_path,
    check_repeat_tune,
    check_device_id,
    check_work_path,
    check_cann,
    check_npu,
    check_lspci,
    check_cpu_binding,
    check_multi_device,
    check_profiling,
    check_static_memory,
    check_device_free,
)
# Where each rule is documented, for the checks that do not name a more precise source themselves.
REFERENCES = {
    "disk": "AOE.md §2.7",
    "workspace": "AOE.md §5 (aoe_workspace), §6",
    "memory": "AOE.md §2.8",
    "cpus": "AOE.md §2.9 (op), §2.10 (subgraph)",
    "te_parallel_compiler": "AOE.md §1",
    "tuning_parallel_num": "AOE.md §1 (aoe.ini), §5",
    "run_loop": "AOE.md §1 (aoe.ini), §5",
    "aoe_mode": "AOE.md §1",
    "mode_supported": "AOE.md §1 (AOE_MODE), §5 (npu-smi layouts)",
    "bank_path": "AOE.md §1",
    "repeat_tune": "AOE.md §1",
    "device_id": "AOE.md §1",
    "work_path": "AOE.md §1",
    "cann": "AOE.md §1, §5",
    "npu": "AOE.md §1, §5",
    "lspci": "AOE.md §2",
    "cpu_binding": "AOE.md §2.2",
    "profiling": "AOE.md §2.5",
    "device_free": "AOE.md §2.4",
}


# every check's id, as --skip names them (a test holds it to what run_checks gives)
CHECK_IDS: tuple[str, ...] = (*REFERENCES, "multi_device", "static_memory")


def run_checks(facts: HostFacts, plan: Plan) -> list[CheckResult]:
    results = [check(facts, plan) for check in ALL_CHECKS]
    for result in results:
        result.reference = result.reference or REFERENCES.get(result.id)
    return results
