"""The preflight checks: pure functions of (host facts, plan), one per documented precondition (AOE.md §1–§2)."""

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
)
from aoe_runner.preflight.checks.resources import (
    check_cpus,
    check_disk_home,
    check_memory,
    check_te_parallel_compiler,
    check_tuning_parallel_num,
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
    check_memory,
    check_cpus,
    check_te_parallel_compiler,
    check_tuning_parallel_num,
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
    check_device_free,
)


def run_checks(facts: HostFacts, plan: Plan) -> list[CheckResult]:
    return [check(facts, plan) for check in ALL_CHECKS]
