"""Campaigns, as the command line uses them: check a file (its plan), run it on Ray, and read the records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aoe_runner.campaign.plan import CampaignPlan, Node, plan_campaign, this_host
from aoe_runner.campaign.record import CampaignRecord, JobRecord, campaign_record, campaign_store, fingerprint, now
from aoe_runner.campaign.runner import CampaignRun, RunOptions
from aoe_runner.campaign.spec import load_campaign
from aoe_runner.common.home import runner_home
from aoe_runner.errors import AoeRunnerError, ExitCode
from aoe_runner.preflight.facts import gather_facts


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
        host = this_host(facts)
        node = Node(
            host.name,
            cluster.cpus if cluster.cpus is not None else host.cpus,
            cluster.memory_bytes if cluster.memory_bytes is not None else host.memory_bytes,
            cluster.npus if cluster.npus is not None else host.npus,
        )
        return plan_campaign(campaign, facts, [node])
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
    starts when a job fits on no node."""
    campaign = load_campaign(path)
    unknown = sorted((options.rerun) - {job.name for job in campaign.jobs})
    if unknown:
        from aoe_runner.errors import UsageError

        raise UsageError(f"--rerun: {', '.join(unknown)} is no job of {path}")
    facts = gather_facts(count_history=False)
    from aoe_runner.campaign.ray_engine import RayEngine

    engine = RayEngine(cluster.address, cluster.cpus, cluster.npus, cluster.memory_bytes, ray_log(home))
    try:
        plan = plan_campaign(campaign, facts, engine.nodes())
        if plan.refused:
            lines = [f"job {need.job}: {need.problem}" for need in plan.refused]
            raise CampaignRefused("nothing was started: " + "; ".join(lines))
        store = campaign_store(home, say)
        started_at = now()
        record = campaign_record(campaign, cluster.address, facts.hostname, started_at, store.new_id(started_at))
        for job, needs in zip(campaign.jobs, plan.needs, strict=True):
            print_ = fingerprint(job, needs.framework, facts.soc, facts.cann.version)
            framework = needs.framework.value if needs.framework else None
            record.jobs.append(JobRecord(name=job.name, fingerprint=print_, framework=framework, needs=needs.describe()))
        say(
            f"campaign {record.id}: {len(campaign.jobs)} jobs on {len(plan.nodes)} node(s); recording to {store.root / record.id}"
        )
        code = CampaignRun(plan, record, store, engine, options, say, show).run()
        return record, code
    finally:
        engine.close()
