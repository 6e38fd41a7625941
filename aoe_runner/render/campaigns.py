"""Campaigns in every format: a plan (`campaign check`), one campaign's jobs (`campaign status`), the list.

Job names, hosts and paths come from users: every cell goes through visible() in text, and CSV cells through the
CSV writer's own guard."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from aoe_runner.common.safe_text import visible
from aoe_runner.render.numbers import local_time
from aoe_runner.render.table import Column
from aoe_runner.render.table import render as render_table

if TYPE_CHECKING:
    from aoe_runner.campaign.plan import CampaignPlan
    from aoe_runner.campaign.record import CampaignRecord, JobRecord

PLAN_COLUMNS = ("job", "scenario", "cpus", "memory", "fits on", "problem")
JOB_COLUMNS = ("job", "state", "attempts", "host", "device", "run", "started", "took", "last result", "why")
LIST_COLUMNS = ("campaign", "name", "state", "started", "jobs", "succeeded", "failed", "skipped", "stopped")


def plan_rows(plan: CampaignPlan) -> list[dict[str, Any]]:
    return [
        {
            "job": need.job,
            "scenario": need.scenario.value,
            "framework": need.framework.value if need.framework else None,
            "cpus": need.cpus,
            "cpu_formula": need.cpu_formula,
            "memory_bytes": need.memory_bytes,
            "memory_formula": need.memory_formula,
            "fits_on": list(need.fits_on),
            "problem": need.problem,
        }
        for need in plan.needs
    ]


def plan_text(plan: CampaignPlan, markdown: bool = False, width: int | None = None) -> str:
    nodes = ", ".join(f"{n.name}: {n.npus:g} NPU, {n.cpus:g} CPUs, {n.memory_bytes / 2**30:.0f} GiB" for n in plan.nodes)
    rows = [
        {
            "job": row["job"],
            "scenario": row["scenario"] + (f", {row['framework']}" if row["framework"] else ""),
            "cpus": str(row["cpus"]),
            "memory": f"{row['memory_bytes'] / 2**30:.1f} GiB" if row["memory_bytes"] else "unknown",
            "fits on": ", ".join(row["fits_on"]) or "nowhere",
            "problem": row["problem"] or "",
        }
        for row in plan_rows(plan)
    ]
    table = rows_table(PLAN_COLUMNS, rows, markdown, width)
    formulas = [f"  {need.job}: CPUs {need.cpu_formula}; memory {need.memory_formula}" for need in plan.needs]
    head = f"campaign {plan.campaign.name} ({plan.campaign.path}): {len(plan.needs)} jobs; nodes: {nodes or 'none'}"
    return "\n".join([visible(head), "", table.rstrip("\n"), "", "formulas:", *map(visible, formulas)]) + "\n"


def job_rows(record: CampaignRecord) -> list[dict[str, Any]]:
    return [_job_row(job) for job in record.jobs]


def _job_row(job: JobRecord) -> dict[str, Any]:
    last = job.attempts[-1] if job.attempts else None
    took = None
    if last is not None and last.started_at:  # a running job's time so far
        took = ((last.ended_at or datetime.now(timezone.utc)) - last.started_at).total_seconds()
    return {
        "job": job.name,
        "state": job.state.value,
        "attempts": len(job.attempts),
        "host": last.host if last else None,
        "device": last.device if last else None,
        "run": job.run,
        "started": last.started_at.isoformat() if last and last.started_at else None,
        "took_s": took,
        "exit_code": last.exit_code if last else None,
        "last_result_file": last.last_result_file if last else None,
        "why": job.why,
        "fingerprint": job.fingerprint,
    }


def campaign_text(record: CampaignRecord, markdown: bool = False, width: int | None = None) -> str:
    rows = [
        {
            **{key: "" if value is None else str(value) for key, value in row.items()},
            "started": local_time(row["started"]) if row["started"] else "",
            "took": f"{row['took_s']:.1f} s" if row["took_s"] is not None else "",
            "last result": row["last_result_file"] or "",
        }
        for row in job_rows(record)
    ]
    head = f"campaign {record.id} ({record.name}): {record.state}, started {local_time(record.started_at.isoformat())}"
    where = f"on {record.address}" if record.address else f"on Ray embedded in {record.host}"
    return "\n".join([visible(f"{head} {where}"), "", rows_table(JOB_COLUMNS, rows, markdown, width).rstrip("\n")]) + "\n"


def list_rows(records: list[CampaignRecord]) -> list[dict[str, Any]]:
    rows = []
    for record in records:
        counts = record.counts()
        rows.append(
            {
                "campaign": record.id,
                "name": record.name,
                "state": record.state,
                "started": record.started_at.isoformat(),
                "jobs": len(record.jobs),
                **{state: counts.get(state, 0) for state in ("succeeded", "failed", "skipped", "stopped")},
            }
        )
    return rows


def list_text(records: list[CampaignRecord], markdown: bool = False, width: int | None = None) -> str:
    if not records:
        return "no campaigns recorded\n"
    rows = [
        {**{key: str(value) for key, value in row.items()}, "started": local_time(row["started"])} for row in list_rows(records)
    ]
    return rows_table(LIST_COLUMNS, rows, markdown, width)


def campaign_summary(record: CampaignRecord) -> str:
    """The last lines of `campaign run`: what finished, what was stopped, what never started."""
    counts = record.counts()
    said = ", ".join(f"{number} {state}" for state, number in sorted(counts.items()))
    lines = [f"campaign {record.id} {record.state}: {said}"]
    for job in record.jobs:
        run = f", run {job.run}" if job.run else ""
        why = f" ({job.why})" if job.why else ""
        lines.append(f"  {job.name}: {job.state.value}{run}{why}")
    lines.append(f"see 'aoe-runner campaign status {record.id}'")
    return "\n".join(map(visible, lines)) + "\n"


_TEXT = {"job", "host", "fits on", "name", "why", "problem", "last result"}  # names: cut to fit
_PROSE = {"why", "problem", "note", "fingerprint", "verified"}  # sentences: wrapped to fit (ids are neither)


def rows_table(
    columns: tuple[str, ...], rows: list[dict[str, str]], markdown: bool, width: int | None, optional: tuple[str, ...] = ()
) -> str:
    """Rows of text as a table fitted to width (markdown: a GitHub table); names and sentences are cut or wrapped,
    and the `optional` columns left out to fit, the first named first."""
    if markdown:
        from tabulate import tabulate

        from aoe_runner.common.safe_text import markdown as cell

        cells = [[cell(row.get(name, "")) for name in columns] for row in rows]
        return tabulate(cells, headers=list(columns), tablefmt="github", disable_numparse=True) + "\n"
    spec = [Column.prose(n) if n in _PROSE else Column.text(n) if n in _TEXT else Column(n) for n in columns]
    spec = [replace(c, optional=True, keep=optional.index(c.header)) if c.header in optional else c for c in spec]
    return render_table(spec, [[visible(row.get(name, "")) for name in columns] for row in rows], width) + "\n"
