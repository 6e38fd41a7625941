"""Every output format of the commands that read files, held byte for byte against files in tests/golden/.

A change to an output is made on purpose: regenerate with `AOE_RUNNER_UPDATE_GOLDEN=1 python -m pytest
tests/test_golden_outputs.py` and commit the new goldens in a commit of their own, named for the change.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

GOLDEN = Path(__file__).resolve().parent / "golden"
FACTS = "tests/data/facts/small-2c.json"
CASES: dict[str, tuple[str, ...]] = {
    **{f"report-{f}": ("report", "sample_results", "-f", f) for f in ("table", "json", "csv", "markdown")},
    "report-html": ("report", "sample_results", "-f", "html", "-o", "-"),
    **{
        f"diff-{f}": ("report", "--diff", "sample_results/training_opat", "sample_results/retune", "-f", f)
        for f in ("table", "json", "csv", "markdown")
    },
    "diff-html": ("report", "--diff", "sample_results/training_opat", "sample_results/retune", "-f", "html", "-o", "-"),
    **{f"validate-{f}": ("validate", "sample_results", "-f", f) for f in ("table", "json", "csv")},
    **{
        f"preflight-{f}": ("preflight", "--facts", FACTS, "--model-memory", "4GiB", "-f", f)
        for f in ("table", "json", "markdown", "csv")
    },
    "preflight-server": ("preflight", "--facts", "tests/data/facts/server-192c-8npu.json", "--mode", "subgraph"),
}
PLOTLY = re.compile(r"<script>/\*\*\n\* plotly\.js.*?</script>", re.DOTALL)
GENERATED = re.compile(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC by aoe-runner \S+")


def _stable(text: str) -> str:
    """What may differ between two runs of the same command: the charting library's text, the page's time."""
    return GENERATED.sub("Generated (time) by aoe-runner (version)", PLOTLY.sub("<script>(plotly.js)</script>", text))


def _run(arguments: tuple[str, ...], home: Path) -> str:
    env = {**os.environ, "AOE_RUNNER_HOME": str(home), "COLUMNS": "100", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "aoe_runner", *arguments], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    return (
        f"$ aoe-runner {' '.join(arguments)}\nexit {done.returncode}\n--- stderr\n{done.stderr}--- stdout\n{_stable(done.stdout)}"
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_matches_its_golden(name: str, tmp_path: Path) -> None:
    produced = _run(CASES[name], tmp_path / "home")
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("AOE_RUNNER_UPDATE_GOLDEN") == "1":
        golden.write_text(produced, encoding="utf-8")
    assert produced == golden.read_text(encoding="utf-8")
