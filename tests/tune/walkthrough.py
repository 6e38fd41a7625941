"""The docs' walkthrough and README's quick start, run for real. `python -m tests.tune.walkthrough` prints both.

The walkthrough (docs/guide/walkthrough.md: tune → runs → report → diff → restore → verify) runs on the simulator;
the quick start runs the `train.py` that README shows. Paths, run ids, clock times, durations, hashes and the host
are replaced by the fixed values the docs show, so tests/test_docs.py can compare the docs with a fresh run.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conftest import ROOT
from tests.tune.runner import SIMULATOR

HOME = "/home/me/.local/share/aoe-runner"
PROJECT = "/home/me/bert"
STEPS = (
    "aoe-runner tune train.py --mode op --bank bank --force -- progress --reports 3 --lines 2 --interval 0",
    "aoe-runner runs list",
    "aoe-runner runs show latest",
    "aoe-runner report --run latest --top 3",
    "aoe-runner tune train.py --mode op --bank bank --force -- progress --reports 2 --lines 0 --interval 0",
    "aoe-runner report --diff",
    "aoe-runner bank restore latest",
    "aoe-runner tune train.py --mode op --bank bank --force -- steps 12 --bank-factor 0.8",
    "aoe-runner verify --run latest",
)
QUICK_START_PROJECT = "/home/me/quickstart"
QUICK_START_HOST = "laptop"
QUICK_START_STEPS = (
    "aoe-runner tune train.py --framework tf --mode op --bank bank --force",
    "aoe-runner verify --run latest",
)


def run_walkthrough() -> list[str]:
    """Each step as `$ command` followed by what it printed (stdout and stderr, in order), normalised."""
    return _run(SIMULATOR.read_text(encoding="utf-8"), STEPS, PROJECT, "npu-host-01", mask_hashes=True)


def quick_start_script() -> str:
    """The `train.py` README's quick start shows: its first python block."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def run_quick_start() -> list[str]:
    """README's quick-start tune and verify on its own train.py, each as `$ command` and its output, normalised.

    Its hashes stay real: the script is README's, and both banks are empty.
    """
    return _run(quick_start_script(), QUICK_START_STEPS, QUICK_START_PROJECT, QUICK_START_HOST, mask_hashes=False)


def _run(script: str, steps: tuple[str, ...], project: str, host: str, *, mask_hashes: bool) -> list[str]:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "train.py").write_text(script, encoding="utf-8")
        env = {"AOE_RUNNER_HOME": str(root / "home"), "AOE_RUNNER_LOCK_DIR": str(root / "locks"), "PATH": "/usr/bin:/bin"}
        run_ids: list[str] = []
        blocks = []
        for step in steps:
            argv = [sys.executable, "-m", "aoe_runner", *step.split()[1:]]
            done = subprocess.run(
                argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120
            )
            run_ids = list(dict.fromkeys(run_ids + re.findall(r"\d{8}-\d{6}-[0-9a-f]{8}", done.stdout)))
            blocks.append(f"$ {step}\n" + _normalise(done.stdout, root, run_ids, project, host, mask_hashes))
        return blocks


def _normalise(text: str, root: Path, run_ids: list[str], project: str, host: str, mask_hashes: bool) -> str:
    text = text.replace(str(root / "home"), HOME).replace(str(root), project).replace(sys.executable, "/usr/bin/python3")
    for index, run_id in enumerate(run_ids):
        text = text.replace(run_id, f"20261121-0930{index:02d}-{index * 0x11111111 + 0xAB12CD34 & 0xFFFFFFFF:08x}")
    text = re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", "2026-11-21 09:30:00", text)
    text = re.sub(r"took \d+\.\d s", "took 0.9 s", text)
    text = re.sub(r"succeeded in \d+\.\d s", "succeeded in 0.4 s", text)
    if mask_hashes:
        text = re.sub(r"sha256 [0-9a-f]{12}", "sha256 5f0c2b9a7e41", text)
    text = re.sub(r"aoe_result_opat_20261121120000000_\d+\.json", "aoe_result_opat_20261121120000000_48213.json", text)
    text = re.sub(r"host       \S+, ", f"host       {host}, ", text)
    text = re.sub(r"Python \d+\.\d+\.\d+", "Python 3.11.7", text)
    text = re.sub(r"-\d{8}-\d{6}-before-restoring-", "-20261121-093100-before-restoring-", text)
    text = re.sub(r"bank-backups/\d{8}-\d{6}-", "bank-backups/20261121-093100-", text)
    return text


if __name__ == "__main__":
    print("\n".join(run_walkthrough()))
    print("\n".join(run_quick_start()))
