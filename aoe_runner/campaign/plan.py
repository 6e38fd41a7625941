"""What each job of a campaign asks of a host, by preflight's formulas, and where it fits.

A job asks for one NPU, the CPUs of its scenario's formula (preflight/checks/resources.cpus_needed) and the memory
of its formula: model memory x TUNING_PARALLEL_NUM in training (nothing when model_memory is not given), 32 GiB for
the offline CLI. TE_PARALLEL_COMPILER comes from the job's env (else this host's environment, else AOE's 8);
TUNING_PARALLEL_NUM from this host's aoe.ini (else 8): the hosts of a campaign are expected to share one install.
`min(cores/2, 8)` is taken with the cores of the largest node, the host the job can fit on if any can.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from aoe_runner.campaign.spec import Campaign, Job
from aoe_runner.common.quantities import ascii_whole
from aoe_runner.errors import AoeRunnerError
from aoe_runner.frameworks.kinds import Framework, Scenario
from aoe_runner.preflight.checks.resources import OFFLINE_MEMORY_BYTES, cpu_rule, cpus_needed
from aoe_runner.preflight.checks.settings import tuning_parallel_num
from aoe_runner.preflight.facts import HostFacts
from aoe_runner.preflight.plan import plan_for


@dataclass(frozen=True)
class Node:
    """A host a campaign can run on, as Ray (or this host's facts) describes it."""

    name: str
    cpus: float
    memory_bytes: int
    npus: float


@dataclass(frozen=True)
class JobNeeds:
    job: str
    scenario: Scenario
    framework: Framework | None
    cpus: int
    memory_bytes: int  # 0: not known (no model_memory for a training job)
    cpu_formula: str
    memory_formula: str
    fits_on: tuple[str, ...] = ()  # node names
    problem: str | None = None  # why it fits nowhere, with the numbers

    def describe(self) -> str:
        memory = f"{self.memory_bytes / 2**30:.1f} GiB" if self.memory_bytes else "memory unknown (no model_memory)"
        return f"1 NPU, {self.cpus} CPUs, {memory}"


@dataclass
class CampaignPlan:
    campaign: Campaign
    nodes: list[Node]
    needs: list[JobNeeds] = field(default_factory=list)

    @property
    def refused(self) -> list[JobNeeds]:
        return [need for need in self.needs if need.problem is not None]


def plan_campaign(campaign: Campaign, facts: HostFacts, nodes: list[Node]) -> CampaignPlan:
    """Every job's needs and the nodes it fits on; a job's framework is read from its script when `auto`."""
    plan = CampaignPlan(campaign, nodes)
    cores = int(max((node.cpus for node in nodes), default=facts.logical_cpus))
    for job in campaign.jobs:
        try:
            plan.needs.append(_fit(job_needs(job, facts, cores), nodes))
        except AoeRunnerError as error:  # e.g. PyTorch with subgraph tuning
            plan.needs.append(JobNeeds(job.name, Scenario.TRAINING, None, 0, 0, "-", "-", problem=error.message))
    return plan


def job_needs(job: Job, facts: HostFacts, cores: int) -> JobNeeds:
    framework = _framework(job)
    env = dict(job.env)
    te = _int(env.get("TE_PARALLEL_COMPILER", facts.environment.get("TE_PARALLEL_COMPILER")), 8)
    tpn = tuning_parallel_num(facts).value or 8
    model_bytes = job.model.stat().st_size if job.model is not None else None
    plan = plan_for(job.mode.value, 1, job.model_memory, None, framework, model_bytes)
    cpus = math.ceil(cpus_needed(plan, te, tpn, cores))
    if plan.scenario is not Scenario.TRAINING:
        memory, memory_formula = OFFLINE_MEMORY_BYTES, "32 GiB for the offline aoe process"
    elif plan.model_memory_bytes is not None:
        memory = plan.model_memory_bytes * tpn
        memory_formula = f"model memory {plan.model_memory_bytes / 2**30:.1f} GiB x TUNING_PARALLEL_NUM {tpn}"
    else:
        memory, memory_formula = 0, "unknown: give model_memory"
    return JobNeeds(
        job.name, plan.scenario, framework, cpus, memory, f"{cpu_rule(plan, te, tpn, cores)} = {cpus}", memory_formula
    )


def _fit(needs: JobNeeds, nodes: list[Node]) -> JobNeeds:
    fits = tuple(n.name for n in nodes if n.npus >= 1 and n.cpus >= needs.cpus and n.memory_bytes >= needs.memory_bytes)
    if fits:
        return replace(needs, fits_on=fits)
    if not nodes:
        return replace(needs, problem="no node to run on")
    best = max(nodes, key=lambda node: (node.npus >= 1, node.cpus, node.memory_bytes))
    short = []
    if best.npus < 1:
        short.append("no node has an NPU")
    if best.cpus < needs.cpus:
        short.append(f"{needs.cpus} CPUs ({needs.cpu_formula}), the largest node has {best.cpus:g}")
    if best.memory_bytes < needs.memory_bytes:
        has = f"node {best.name} has {best.memory_bytes / 2**30:.1f} GiB"
        short.append(f"{needs.memory_bytes / 2**30:.1f} GiB ({needs.memory_formula}), {has}")
    return replace(needs, problem="fits on no node: needs " + "; ".join(short))


def _framework(job: Job) -> Framework | None:
    if job.model is not None:
        return None
    chosen = Framework.parse(job.framework)
    if chosen is not None:
        return chosen
    return _detected(job.target)


@functools.lru_cache(maxsize=1024)
def _detected(script: Path) -> Framework | None:
    """The script's framework, read once per script for all the jobs that run it."""
    from aoe_runner.frameworks.detect import detect_framework

    try:
        return detect_framework(script).framework
    except AoeRunnerError:
        return None  # tune says why when the job runs; its needs are the training formulas meanwhile


def _int(text: str | None, default: int) -> int:
    value = ascii_whole(text) if text is not None else None
    return default if value is None else value


def this_host(facts: HostFacts) -> Node:
    """This host as a node: its CPUs, available memory and the NPUs it shows."""
    return Node(facts.hostname, facts.logical_cpus, facts.available_memory_bytes, len(facts.npus.devices))
