"""`aoe-runner preflight` as a person reads it: one row per check, the formulas under the table."""

from __future__ import annotations

from tabulate import tabulate

from aoe_runner.preflight.checks import Status
from aoe_runner.preflight.report import PreflightReport
from aoe_runner.render.safe_text import visible

_LABELS = {Status.PASS: "ok", Status.WARN: "WARN", Status.FAIL: "FAIL", Status.SKIP: "skip"}
_WIDTHS = [None, 22, 40, 30, 44]
_ORDER = {Status.FAIL: 0, Status.WARN: 1, Status.SKIP: 2, Status.PASS: 3}


def render_preflight(report: PreflightReport) -> str:
    facts, plan = report.facts, report.plan
    memory = f"model memory {plan.model_memory_bytes / 2**30:.1f} GiB" if plan.model_memory_bytes else "model memory unknown"
    lines = [
        f"preflight for {plan.mode.value} tuning ({visible(plan.mode_source)}), P={plan.procs}, {memory}",
        f"host {visible(facts.hostname)}: {facts.logical_cpus} CPUs, {facts.available_memory_bytes / 2**30:.1f} GiB available, "
        f"SoC {visible(facts.soc or 'unknown')}, CANN {visible(facts.cann.describe())}",
        f"npu-smi: {visible(facts.npus.describe())}",
        "",
    ]
    checks = sorted(report.checks, key=lambda check: _ORDER[check.status])  # stable: failures first, then document order
    rows = [[_LABELS[c.status], *map(visible, (c.title, c.observed, c.required, c.fix or ""))] for c in checks]
    headers = ["status", "check", "observed", "required", "fix"]
    lines.append(tabulate(rows, headers=headers, disable_numparse=True, maxcolwidths=_WIDTHS))
    formulas = [check for check in report.checks if check.formula]
    if formulas:
        lines += ["", "formulas:"]
        for check in formulas:
            lines.append(f"  {check.id}: {visible(check.formula)}")
            lines.extend(f"      {visible(source)}" for source in check.sources)
    counts = {status: report.count(status) for status in Status}
    summary = f"{counts[Status.FAIL]} failed, {counts[Status.WARN]} warnings, {counts[Status.PASS]} passed"
    lines += ["", f"{summary}, {counts[Status.SKIP]} skipped"]
    return "\n".join(lines) + "\n"
