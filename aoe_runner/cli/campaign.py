"""`aoe-runner campaign`: many tuning jobs from one file, packed onto NPUs by AOE's formulas and run on Ray."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aoe_runner.cli.options import (
    CSV,
    HTML,
    JSON,
    MARKDOWN,
    TABLE,
    JsonFlag,
    OutputFile,
    emit,
    format_option,
    split_names,
    whole_number,
)
from aoe_runner.cli.pages import formatter_for
from aoe_runner.cli.terminal import terminal
from aoe_runner.errors import ExitCode, InputError, UsageError

if TYPE_CHECKING:
    from aoe_runner.campaign.api import Cluster

FORMATS = (TABLE, JSON, MARKDOWN, CSV)
File = Annotated[Path, typer.Argument(metavar="FILE", help="The campaign file (TOML).")]
Address = Annotated[
    str | None, typer.Option("--address", metavar="ADDR", help="A Ray cluster (ray start --head) [default: Ray embedded here].")
]
Cpus = Annotated[str | None, typer.Option("--cpus", metavar="N", help="Embedded Ray: the CPUs it offers [default: this host's].")]
Npus = Annotated[str | None, typer.Option("--npus", metavar="N", help="Embedded Ray: the NPUs it offers [default: those found].")]
Memory = Annotated[str | None, typer.Option("--memory", metavar="SIZE", help="Embedded Ray: the memory it offers.")]
MaxParallel = Annotated[str | None, typer.Option("--max-parallel", metavar="N", help="At most N jobs at once.")]
FailFast = Annotated[bool, typer.Option("--fail-fast", help="Stop every job at the first that does not succeed.")]
Retries = Annotated[str, typer.Option("--retries", metavar="N", help="Runs of a job whose node died, on another node.")]
Rerun = Annotated[list[str] | None, typer.Option("--rerun", metavar="JOB[,JOB]", help="Run these even if done before.")]
RerunAll = Annotated[bool, typer.Option("--rerun-all", help="Run every job, even those done before.")]
Force = Annotated[bool, typer.Option("--force", help="Pass --force to every tune (preflight failures do not stop it).")]
Skip = Annotated[list[str] | None, typer.Option("--skip", metavar="CHECK[,CHECK]", help="Pass --skip to every tune.")]
Reference = Annotated[str | None, typer.Argument(metavar="[ID]", help="A campaign id, a prefix of one, or latest.")]
Format = Annotated[str | None, format_option(*FORMATS)]
StatusFormat = Annotated[str | None, format_option(*FORMATS, HTML, notes=" (html: a page of the jobs over time, with -o FILE)")]


def campaign_check(
    file: File, address: Address = None, cpus: Cpus = None, npus: Npus = None, memory: Memory = None,
    output_format: Format = None, as_json: JsonFlag = False,
) -> int:  # fmt: skip
    """Check a campaign file and show its plan: what each job asks for (NPU, CPUs, memory) and where it fits."""
    from aoe_runner.campaign.api import check_campaign

    formatter = formatter_for(output_format, as_json, FORMATS, None)
    with _problems_one_per_line():
        plan = check_campaign(file, _cluster(address, cpus, npus, memory))
    emit(terminal, formatter.campaign_plan(plan), None)
    return ExitCode.FINDING if plan.refused else ExitCode.OK


def campaign_run(
    file: File, address: Address = None, cpus: Cpus = None, npus: Npus = None, memory: Memory = None,
    max_parallel: MaxParallel = None, fail_fast: FailFast = False, retries: Retries = "1", rerun: Rerun = None,
    rerun_all: RerunAll = False, force: Force = False, skip: Skip = None,
) -> int:  # fmt: skip
    """Run a campaign on Ray: each job an ordinary tune on the node and NPU Ray gives it; done jobs are skipped."""
    from aoe_runner.campaign.api import run_campaign
    from aoe_runner.campaign.runner import RunOptions
    from aoe_runner.common.home import runner_home

    skipped = _known_checks(split_names(skip))
    tune_options = (("--force",) if force else ()) + tuple(part for name in skipped for part in ("--skip", name))
    options = RunOptions(
        max_parallel=whole_number(max_parallel, "--max-parallel", minimum=1), fail_fast=fail_fast,
        retries=whole_number(retries, "--retries") or 0, rerun=frozenset(split_names(rerun)), rerun_all=rerun_all,
        tune_options=tune_options,
    )  # fmt: skip
    from aoe_runner.render.campaign_progress import CampaignView
    from aoe_runner.render.campaigns import campaign_summary

    view = CampaignView(terminal, live=terminal.err_is_terminal() and not terminal.quiet)
    try:
        with _problems_one_per_line():
            record, code = run_campaign(
                file, _cluster(address, cpus, npus, memory), options, runner_home(), view.say, view.status
            )
    finally:
        view.clear()
    terminal.result(campaign_summary(record))
    return code


def campaign_status(
    reference: Reference = None, output_format: StatusFormat = None, as_json: JsonFlag = False, output: OutputFile = None
) -> int:
    """One campaign's jobs: state, host, device, run and timings (the latest campaign by default)."""
    from aoe_runner.campaign.record import campaign_store
    from aoe_runner.common.home import runner_home

    formatter = formatter_for(output_format, as_json, (*FORMATS, HTML), output)
    emit(terminal, formatter.campaign(campaign_store(runner_home(), terminal.warning).resolve(reference)), output)
    return ExitCode.OK


def campaign_list(output_format: Format = None, as_json: JsonFlag = False) -> int:
    """Every recorded campaign, newest first, with its jobs' states."""
    from aoe_runner.campaign.record import CampaignRecord, campaign_store
    from aoe_runner.common.home import runner_home

    formatter = formatter_for(output_format, as_json, FORMATS, None)
    found = list(campaign_store(runner_home(), terminal.warning).all())
    for problem in (record for record in found if not isinstance(record, CampaignRecord)):
        terminal.warning(problem.message)
    emit(terminal, formatter.campaign_list([r for r in reversed(found) if isinstance(r, CampaignRecord)]), None)
    return ExitCode.OK


def _cluster(address: str | None, cpus: str | None, npus: str | None, memory: str | None) -> Cluster:
    from aoe_runner.campaign.api import Cluster
    from aoe_runner.common.quantities import parse_size

    size = parse_size(memory, "--memory") if memory is not None else None
    return Cluster(address, whole_number(cpus, "--cpus", minimum=1), whole_number(npus, "--npus"), size)


@contextmanager
def _problems_one_per_line() -> Iterator[None]:
    """A campaign file's problems, each on its own line (the error line of the exit code gives the count)."""
    from aoe_runner.campaign.spec import CampaignFileError

    try:
        yield
    except CampaignFileError as error:
        for problem in error.problems[:-1]:
            terminal.error(f"{error.where}: {problem}")
        raise InputError(error.where, error.problems[-1]) from None


def _known_checks(names: tuple[str, ...]) -> tuple[str, ...]:
    """--skip's names, checked before Ray starts: every tune would refuse an unknown one."""
    from aoe_runner.preflight.checks import CHECK_IDS

    known = set(CHECK_IDS)
    unknown = sorted(set(names) - known)
    if unknown:
        raise UsageError(f"--skip: {', '.join(unknown)} is not a preflight check (one of {', '.join(sorted(known))})")
    return names
