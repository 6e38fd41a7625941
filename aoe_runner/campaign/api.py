"""Campaigns, as the command line uses them: check a file (its plan), run it on Ray, and read the records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aoe_runner.campaign.plan import CampaignPlan, JobNeeds, Node, plan_campaign, this_host
from aoe_runner.campaign.record import (
    CampaignRecord,
    CampaignStore,
    JobRecord,
    campaign_record,
    campaign_store,
    fingerprint,
    now,
)
from aoe_runner.campaign.runner import CampaignRun, Engine, RunOptions, Submission
from aoe_runner.campaign.spec import load_campaign
from aoe_runner.common.home import runner_home
from aoe_runner.errors import AoeRunnerError, ExitCode
from aoe_runner.preflight.facts import HostFacts, gather_facts


@dataclass(frozen=True)
class Cluster:
    """Where a campaign runs: a Ray cluster's address, or an embedded Ray on this host with what it declares."""

    address: str | None = None
    cpus: int | None = None
    npus: int | None = None
    memory_bytes: int | None = None


def ray_log(home: Path) -> Path:
    """Where Ray's own output goes (its start-up lines and what the processes it starts print)."""
    return home / "campaigns" / "ray.log"


class CampaignRefused(AoeRunnerError):
    """A job fits on no node: nothing was started (exit 1, as a tune preflight refuses)."""

    exit_code = ExitCode.FINDING


def check_campaign(path: Path, cluster: Cluster) -> CampaignPlan:
    """The campaign's plan: each job's needs and the nodes it fits on (this host, or the cluster's nodes)."""
    campaign = load_campaign(path)
    facts = gather_facts(count_history=False)
    if cluster.address is None:
        return plan_campaign(campaign, facts, [_this_node(facts, cluster)])
    from aoe_runner.campaign.ray_engine import RayEngine

    engine = RayEngine(cluster.address, None, None, None, ray_log(runner_home()))
    try:
        return plan_campaign(campaign, facts, engine.nodes())
    finally:
        engine.close()


def run_campaign(
    path: Path,
    cluster: Cluster,
    options: RunOptions,
    home: Path,
    say: Callable[[str], None],
    show: Callable[[CampaignRecord], None] = lambda record: None,
) -> tuple[CampaignRecord, int]:
    """Run the campaign to its end (or to Ctrl-C); its record and the exit code. CampaignRefused before anything
    starts when a job fits on no node. When every job already succeeded with the same fingerprint, Ray never
    starts: the campaign is recorded with each job skipped."""
    campaign = load_campaign(path)
    unknown = sorted((options.rerun) - {job.name for job in campaign.jobs})
    if unknown:
        from aoe_runner.errors import UsageError

        raise UsageError(f"--rerun: {', '.join(unknown)} is no job of {path}")
    facts = gather_facts(count_history=False)
    store = campaign_store(home, say)
    here = plan_campaign(campaign, facts, [_this_node(facts, cluster)])  # what the fingerprints need: the frameworks
    prints = _fingerprints(here, facts)  # each job's script or model hashed once; the same on any plan
    if _all_done_before(here, prints, store, options):
        return _recorded_run(here, prints, store, cluster, facts, options, say, show, _NoEngine())
    from aoe_runner.campaign.ray_engine import RayEngine

    engine = RayEngine(cluster.address, cluster.cpus, cluster.npus, cluster.memory_bytes, ray_log(home))
    try:
        plan = plan_campaign(campaign, facts, engine.nodes())
        if plan.refused:
            lines = [f"job {need.job}: {need.problem}" for need in plan.refused]
            raise CampaignRefused("nothing was started: " + "; ".join(lines))
        return _recorded_run(plan, prints, store, cluster, facts, options, say, show, engine)
    finally:
        engine.close()


def _recorded_run(
    plan: CampaignPlan,
    prints: list[str],
    store: CampaignStore,
    cluster: Cluster,
    facts: HostFacts,
    options: RunOptions,
    say: Callable[[str], None],
    show: Callable[[CampaignRecord], None],
    engine: Engine,
) -> tuple[CampaignRecord, int]:
    started_at = now()
    record = campaign_record(plan.campaign, cluster.address, facts.hostname, started_at, store.new_id(started_at))
    record.jobs.extend(_job_records(plan, prints))
    nodes = f"{len(plan.nodes)} node(s)" if not isinstance(engine, _NoEngine) else "no node: every job is done"
    say(f"campaign {record.id}: {len(plan.campaign.jobs)} jobs on {nodes}; recording to {store.root / record.id}")
    code = CampaignRun(plan, record, store, engine, options, say, show).run()
    return record, code


def _fingerprints(plan: CampaignPlan, facts: HostFacts) -> list[str]:
    """Each job's fingerprint, in the campaign's order (what it needs of a node plays no part in it)."""
    found = zip(plan.campaign.jobs, plan.needs, strict=True)
    return [fingerprint(job, needs.framework, facts.soc, facts.cann.version) for job, needs in found]


def _job_records(plan: CampaignPlan, prints: list[str]) -> list[JobRecord]:
    records = []
    for job, needs, print_ in zip(plan.campaign.jobs, plan.needs, prints, strict=True):
        framework = needs.framework.value if needs.framework else None
        records.append(JobRecord(name=job.name, fingerprint=print_, framework=framework, needs=needs.describe()))
    return records


def _all_done_before(plan: CampaignPlan, prints: list[str], store: CampaignStore, options: RunOptions) -> bool:
    if options.rerun_all or options.rerun:
        return False
    successes = store.successes(plan.campaign.name)
    return all((job.name, print_) in successes for job, print_ in zip(plan.campaign.jobs, prints, strict=True))


def _this_node(facts: HostFacts, cluster: Cluster) -> Node:
    host = this_host(facts)
    return Node(
        host.name,
        cluster.cpus if cluster.cpus is not None else host.cpus,
        cluster.memory_bytes if cluster.memory_bytes is not None else host.memory_bytes,
        cluster.npus if cluster.npus is not None else host.npus,
    )


class _NoEngine:
    """The engine of a campaign whose every job is done: nothing is submitted, so nothing of it is ever called."""

    def submit(self, needs: JobNeeds, submission: Submission) -> Any:
        raise AssertionError("a campaign with every job done submitted one")

    def finished(self, handles: list[Any], timeout_s: float) -> list[Any]:
        return []

    def outcome(self, handle: Any) -> tuple[int | None, str | None]:
        return None, None

    def cancel(self, handle: Any) -> None:
        pass

    def heard(self) -> dict[str, dict[int, dict[str, Any]]]:
        return {}
