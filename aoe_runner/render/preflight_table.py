"""`aoe-runner preflight` as a person reads it: one row per check, the formulas under the table; also markdown and csv."""

from __future__ import annotations

from aoe_runner.common.colour import VERDICTS, paint
from aoe_runner.common.safe_text import markdown, visible
from aoe_runner.common.words import count
from aoe_runner.preflight.checks import CheckResult, Status
from aoe_runner.preflight.report import PreflightReport
from aoe_runner.render.table import Column
from aoe_runner.render.table import render as render_table
from aoe_runner.render.width import wrap, wrap_line

# The words of csv and JSON; a failure and a warning in capitals, so that they stand out without colour too.
_LABELS = {Status.PASS: "pass", Status.WARN: "WARN", Status.FAIL: "FAIL", Status.SKIP: "skip"}
_ORDER = {Status.FAIL: 0, Status.WARN: 1, Status.SKIP: 2, Status.PASS: 3}
COLUMNS = [
    Column("status", verdict=True), Column.prose("check"), Column.prose("observed"), Column.prose("required"),
    Column.prose("fix"),
]  # fmt: skip
HEADERS = [column.header for column in COLUMNS]
CSV_COLUMNS = ("id", "status", "check", "observed", "required", "fix", "formula", "sources", "reference")


def render_preflight(report: PreflightReport, width: int | None = None, as_markdown: bool = False, colour: bool = False) -> str:
    text = markdown if as_markdown else visible
    lines = [*(wrap_line(text(line), width, "  ") for line in _header(report)), ""]
    rows = [[_LABELS[c.status], *map(text, (c.title, c.observed, c.required, c.fix or ""))] for c in _ordered(report)]
    if as_markdown:
        from tabulate import tabulate  # markdown only: tabulate and wcwidth cost 30 ms to import

        lines.append(tabulate(rows, headers=HEADERS, tablefmt="github", disable_numparse=True))
    else:
        lines.append(render_table(COLUMNS, rows, width, VERDICTS if colour else None))
    formulas = _formulas(report, None if as_markdown else width)
    if formulas:
        lines += ["", "formulas:", *(["", "```text", *formulas, "```"] if as_markdown else formulas)]
    lines += ["", _totals(report)]
    return "\n".join(lines) + "\n"


def render_preflight_short(report: PreflightReport, width: int | None = None, colour: bool = False) -> str:
    """What needs action: each failure and warning with its formula and fix, then one line for the rest."""
    lines = [*(wrap_line(visible(line), width, "  ") for line in _header(report)), ""]
    for check in (c for c in _ordered(report) if c.status in (Status.FAIL, Status.WARN)):
        label = f"{_LABELS[check.status]:<6}"
        lines.append(_indented(f"{check.title}: {check.observed}; needs {check.required}", label, width, colour))
        if check.formula:
            lines.append(_indented(check.formula, " " * len(label), width))
        if check.fix:
            lines.append(_indented(f"fix: {check.fix}", " " * len(label), width))
    if len(lines) > 4:
        lines.append("")
    skipped = report.count(Status.SKIP)
    rest = f"{count(report.count(Status.PASS), 'check')} passed" + (f" and {skipped} skipped" if skipped else "")
    lines += [wrap_line(f"{rest}: -v shows them, and where each number came from", width, "  "), _totals(report)]
    return "\n".join(lines) + "\n"


def _indented(text: str, lead: str, width: int | None, colour: bool = False) -> str:
    """`lead` (painted when `colour`) then text, wrapped between words to `width`, the later lines under the first's."""
    room = None if width is None else max(width - len(lead), 20)
    first, *rest = wrap(visible(text), room)
    shown = paint(lead.rstrip(), VERDICTS.get(lead.strip())) + lead[len(lead.rstrip()) :] if colour else lead
    return "\n".join([shown + first, *(" " * len(lead) + line for line in rest)])


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
    scenario = f"{_SCENARIOS[plan.scenario.value]}, " if plan.scenario.value in _SCENARIOS else ""
    framework = f"{plan.framework.value}, " if plan.framework is not None and not scenario else ""
    return [
        f"preflight for {plan.mode.value} tuning ({plan.mode_source}), {scenario}{framework}P={plan.procs}, {memory}",
        f"host {facts.hostname}: {count(facts.logical_cpus, 'CPU')}, {facts.available_memory_bytes / 2**30:.1f} GiB available, "
        f"SoC {facts.soc or 'unknown'}, CANN {facts.cann.describe()}",
        f"npu-smi: {facts.npus.describe()}",
    ]


_SCENARIOS = {  # the training scenario goes unsaid
    "pytorch": "PyTorch dump then offline CLI",
    "offline": "model file, offline CLI",
}


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
