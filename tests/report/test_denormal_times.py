"""A time too small to be a measurement (a denormal 5e-324, anything below 1e-06) is treated as a zero time is, in
every format: the record is left out of every saving, with one warning; no speed-up is ever inf, infx or null
(issue 42, finding 12)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


def _operator(name: str, before: float, after: float) -> dict:  # type: ignore[type-arg]
    improvement = f"{(before / after - 1) * 100:.2f}%" if after > 1e-300 else "100.00%"
    times = {"performance_before_tune(us)": before, "performance_after_tune(us)": after, "performance_improvement": improvement}
    return {"op_name": name, "op_type": "Conv2D", "tune_performance": {"Format": {**times, "update_mode": "add"}}}


@pytest.fixture
def result_file(tmp_path: Path) -> Path:
    operators = [_operator("good", 10.0, 8.0), _operator("denormal_after", 10.0, 5e-324), _operator("tiny_before", 1e-9, 8.0)]
    document = {
        "report_20260401090000000_9": [
            {"basic": {"tuning_name": "tiny", "tuning_time(s)": 5}},
            {"OPAT": {"opat_tuning_result": "tuning successful", "repo_modified_operators": operators}},
        ]
    }
    path = tmp_path / "aoe_result_opat_20260401090000000_9.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("output", ["table", "markdown", "csv", "json"])
def test_a_time_too_small_to_measure_is_left_out_in_every_format(tmp_path: Path, result_file: Path, output: str) -> None:
    env = {**os.environ, "AOE_RUNNER_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "report", str(result_file), "--format", output, "--wide"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    warning = "2 of 3 operator records skipped (a time is zero, negative, below 1e-06 or from 1e+300) (first: denormal_after: before 10, after 4.94066e-324)"
    assert warning in done.stderr + done.stdout, done.stderr  # on stderr; in the summary's warnings for json
    shown = done.stdout.replace(warning, "")
    assert "denormal_after" not in shown and "tiny_before" not in shown
    assert re.search(r"\binf", shown.lower()) is None  # no inf, infx, -inf
    if output == "json":
        summary = json.loads(shown)
        assert [row["name"] for row in summary["operators"]] == ["good"] and summary["totals"]["operator_time_saved_us"] == 2.0


def test_the_compiled_check_uses_the_normalisers_bounds() -> None:
    from aoe_runner.results import figures, parsed

    assert (parsed._SHORTEST_TIME, parsed._TIME_LIMIT) == (figures.SHORTEST_TIME, figures.LONGEST_TIME)
