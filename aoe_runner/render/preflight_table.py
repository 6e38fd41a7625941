"""`aoe-runner preflight` as a person reads it: one row per check, the formulas under the table; also markdown and csv."""

from __future__ import annotations

from tabulate import tabulate

from aoe_runner.common.safe_text import markdown, visible
from aoe_runner.common.words import count
from aoe_runner.preflight.checks import CheckResult, Status
from aoe_runner.preflight.report import PreflightReport
from aoe_runner.render.width import table, wrap_line

_LABELS = {Status.PASS: "ok", Status.WARN: "WARN", Status.FAIL: "FAIL", Status.SKIP: "skip"}
_ORDER = {Status.FAIL: 0, Status.WARN: 1, Status.SKIP: 2, Status.PASS: 3}
HEADERS = ["status", "check", "observed", "required", "fix"]
CSV_COLUMNS = ("id", "status", "check", "observed", "required", "fix", "formula", "sources", "reference")


def render_preflight(report: PreflightReport, width: int | None = None, as_markdown: bool = False) -> str:
    text = markdown if as_markdown else visible
    lines = [*(wrap_line(text(line), width, "  ") for line in _header(report)), ""]
    rows = [[_LABELS[c.status], *map(text, (c.title, c.observed, c.required, c.fix or ""))] for c in _ordered(report)]
    if as_markdown:
        lines.append(tabulate(rows, headers=HEADERS, tablefmt="github", disable_numparse=True))
    else:
        lines.append(table(HEADERS, rows, width))
    formulas = _formulas(report, None if as_markdown else width)
    if formulas:
        lines += ["", "formulas:", *(["", "```text", *formulas, "```"] if as_markdown else formulas)]
    lines += ["", _totals(report)]
    return "\n".join(lines) + "\n"


def render_preflight_csv(report: PreflightReport) -> str:
    from aoe_runner.render.csv_text import write_csv

    rows = [
        (c.id, c.status.value, c.title, c.observed, c.required, c.fix, c.formula, "; ".join(c.sources), c.reference)
        for c in _ordered(report)
    ]
    return write_csv(CSV_COLUMNS, rows)


def _header(report: PreflightReport) -> list[str]:
    facts, plan = report.facts, report.plan
    memory = f"model memory {plan.model_memory_bytes / 2**30:.1f} GiB" if plan.model_memory_bytes else "model memory unknown"
    return [
        f"preflight for {plan.mode.value} tuning ({plan.mode_source}), P={plan.procs}, {memory}",
        f"host {facts.hostname}: {count(facts.logical_cpus, 'CPU')}, {facts.available_memory_bytes / 2**30:.1f} GiB available, "
        f"SoC {facts.soc or 'unknown'}, CANN {facts.cann.describe()}",
        f"npu-smi: {facts.npus.describe()}",
    ]


def _ordered(report: PreflightReport) -> list[CheckResult]:
    return sorted(report.checks, key=lambda check: _ORDER[check.status])  # stable: failures first, then document order


def _formulas(report: PreflightReport, width: int | None) -> list[str]:
    """Each formula with this host's numbers, and where each number came from (in markdown: a code block as is)."""
    lines = []
    for check in (check for check in report.checks if check.formula):
        lines.append(wrap_line(visible(f"  {check.id}: {check.formula}"), width, "    "))
        lines.extend(wrap_line(visible(f"      {source}"), width, "  ") for source in check.sources)
    return lines


def _totals(report: PreflightReport) -> str:
    counts = {status: report.count(status) for status in Status}
    return (
        f"{counts[Status.FAIL]} failed, {count(counts[Status.WARN], 'warning')}, {counts[Status.PASS]} passed, "
        f"{counts[Status.SKIP]} skipped"
    )
