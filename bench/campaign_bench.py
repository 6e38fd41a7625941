"""`aoe-runner campaign run` against the same jobs run by hand: what Ray's scheduling costs per job.

A regular install with the `ray` extra (bench/installs.py). JOBS jobs of the simulator's `sleep 1`, on an embedded
Ray declaring NPUS NPUs (and CPUs enough for NPUS jobs by the op formula), against the same jobs as `aoe-runner tune`
processes started by hand, NPUS at a time (one per device, as a person with NPUS terminals would). Interleaved
rounds, median and spread of the wall time, the load before and after. Also: a campaign of one job that exits at
once (the start-up of the embedded Ray and the campaign around one tune), and the campaign process's peak RSS.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from installs import regular_install
from report_bench import ROOT

SIMULATOR = ROOT / "tests" / "simulator" / "train.py"
JOBS = 40
NPUS = 4


@dataclass
class CampaignFigures:
    campaign: list[float] = field(default_factory=list)
    by_hand: list[float] = field(default_factory=list)
    one_job: list[float] = field(default_factory=list)
    peak_rss: int = 0
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def overhead_per_job(self) -> float:
        return (statistics.median(self.campaign) - statistics.median(self.by_hand)) / JOBS * NPUS


def _file(scratch: Path, name: str, jobs: int, args: str) -> Path:
    path = scratch / f"{name}.toml"
    body = "".join(f'[[job]]\nname = "j{n}"\nargs = {args}\n' for n in range(jobs))
    path.write_text(f'[defaults]\nmode = "op"\nscript = "{SIMULATOR}"\n{body}', encoding="utf-8")
    return path


def _campaign(runner: list[str], path: Path, env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds of one `campaign run`, and the campaign process's peak RSS."""
    command = [*runner, "campaign", "run", str(path), "--npus", str(NPUS), "--cpus", str(74 * NPUS), "--force", "--rerun-all"]
    started = time.perf_counter()
    process = psutil.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while process.poll() is None:
        try:
            peak = max(peak, process.memory_info().rss)
        except psutil.Error:
            pass
        time.sleep(0.05)
    if process.returncode != 0:
        raise SystemExit(f"campaign failed ({process.returncode}): {' '.join(command)}")
    return time.perf_counter() - started, peak


def _by_hand(runner: list[str], env: dict[str, str]) -> float:
    def device(number: int) -> None:
        for _ in range(JOBS // NPUS):
            command = [
                *runner,
                "-q",
                "tune",
                str(SIMULATOR),
                "--mode",
                "op",
                "--force",
                "--device",
                str(number),
                "--",
                "sleep",
                "1",
            ]
            subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

    started = time.perf_counter()
    with ThreadPoolExecutor(NPUS) as pool:
        list(pool.map(device, range(NPUS)))
    return time.perf_counter() - started


def measure(rounds: int) -> CampaignFigures:
    figures = CampaignFigures(load_before=os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="aoe-bench-campaign-") as scratch_name:
        scratch = Path(scratch_name)
        install = regular_install(scratch / "venv", extras="ray")
        env = {**os.environ, "AOE_RUNNER_HOME": str(scratch / "home"), "AOE_RUNNER_LOCK_DIR": str(scratch / "locks")}
        many = _file(scratch, "many", JOBS, '["sleep", "1"]')
        one = _file(scratch, "one", 1, '["exit", "0"]')
        for number in range(rounds):
            print(f"  round {number + 1}/{rounds}", flush=True)
            wall, peak = _campaign(install.runner, many, env)
            figures.campaign.append(wall)
            figures.peak_rss = max(figures.peak_rss, peak)
            figures.by_hand.append(_by_hand(install.runner, env))
            figures.one_job.append(_campaign(install.runner, one, env)[0])
    figures.load_after = os.getloadavg()
    return figures


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} s ({min(values):.1f}-{max(values):.1f})"


def render(f: CampaignFigures) -> str:
    load = " / ".join(f"{value:.2f}" for value in f.load_before), " / ".join(f"{value:.2f}" for value in f.load_after)
    ratio = statistics.median(f.campaign) / statistics.median(f.by_hand)
    return "\n".join(
        [
            "## `aoe-runner campaign run`",
            "",
            f"Load average before {load[0]}, after {load[1]}; {len(f.campaign)} interleaved rounds, median (min-max) wall time.",
            f"{JOBS} jobs of the simulator's `sleep 1`, {NPUS} NPUs declared to an embedded Ray (regular install with the",
            f"`ray` extra), against the same jobs as `aoe-runner tune` run by hand, one device per worker, {NPUS} at a time.",
            "",
            "| what | wall |",
            "|---|---|",
            f"| campaign, {JOBS} jobs on {NPUS} NPUs | {_cell(f.campaign)} |",
            f"| by hand, {NPUS} tunes at a time | {_cell(f.by_hand)} |",
            f"| campaign of one job that exits at once (Ray's start-up and the campaign around one tune) | {_cell(f.one_job)} |",
            "",
            f"Campaign / by hand: {ratio:.2f}; scheduling overhead per job, per device: {f.overhead_per_job:.2f} s. Peak RSS of",
            f"the campaign process (Ray's own processes apart): {f.peak_rss / 2**20:.0f} MiB. On this 2-CPU machine every tune's",
            "start-up competes for the same two CPUs in both arms.",
        ]
    )
