"""Release gates: --min-speedup, --min-mean-speedup, --max-tail-regression, on the interval's sceptical end."""

from __future__ import annotations

import json
import random
import re

import pytest

from aoe_runner.verify.gates import Gates, evaluate
from aoe_runner.verify.stats import compare
from tests.render.hostile import markdown_cells
from tests.tune.runner import SIMULATOR, Home, aoe_runner


def _runs(rng: random.Random, medians: list[float], steps: int = 200, noise: float = 0.01) -> list[list[float]]:
    return [[m * (1 + rng.gauss(0, noise)) for _ in range(steps)] for m in medians]


def test_every_gate_passes_on_a_clearly_faster_bank_and_says_by_how_much(home: Home) -> None:
    gates = ("--repeats", "2", "--min-speedup", "5%", "--min-mean-speedup", "5%", "--max-tail-regression", "2%")
    result = aoe_runner(
        home, "verify", str(SIMULATOR), "--bank", "bank", "-f", "json", *gates, "--", "steps", "40", "--bank-factor", "0.8"
    )

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["gates_passed"] is True
    assert [(g["gate"], g["statistic"], g["limit_pct"], g["passed"]) for g in report["gates"]] == [
        ("min-speedup", "median", 5.0, True),
        ("min-mean-speedup", "mean", 5.0, True),
        ("max-tail-regression", "p95", 2.0, True),
        ("max-tail-regression", "p99", 2.0, True),
    ]
    changes = {change["statistic"]: change for change in report["comparison"]["changes"]}
    median, p99 = report["gates"][0], report["gates"][3]
    assert median["bound_pct"] == pytest.approx((changes["median"]["ci_low"] - 1) * 100)
    assert median["margin_pct"] == pytest.approx(median["bound_pct"] - 5)
    assert 5 < median["margin_pct"] < 25  # a 25% speed-up clears 5% by up to 20 points (2 runs: a wide interval)
    assert p99["bound_pct"] == pytest.approx(changes["p99"]["change_ci_high_pct"])
    assert p99["margin_pct"] == pytest.approx(2 - p99["bound_pct"])
    assert "error:" not in result.stderr


def test_a_speedup_short_of_the_gate_exits_1_naming_the_gate_and_the_shortfall(home: Home) -> None:
    """0.9 gives about 11%: short of the required 20%, and the markdown block says so in a PR comment."""
    result = aoe_runner(
        home, "verify", str(SIMULATOR), "--bank", "bank", "-f", "markdown", "--repeats", "2", "--min-speedup", "20%", "--", "steps", "40",
        "--bank-factor", "0.9",
    )  # fmt: skip

    assert result.returncode == 1
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    found = re.fullmatch(
        r"error: gate min-speedup failed: median speed-up: the 95% interval's lower bound \+(\d+\.\d)% is (\d+\.\d) points "
        r"short of the required \+20%",
        line,
    )
    assert found is not None, line
    assert 0 < float(found[1]) < 12 and float(found[2]) == pytest.approx(20 - float(found[1]), abs=0.11)  # 2 runs: wide
    markdown = result.stdout
    assert markdown.startswith("## aoe-runner verify: 1 of 1 gates failed\n")
    (row,) = [row for row in markdown.splitlines() if row.startswith("| min-speedup")]
    assert "| at least +20% " in row and f"| **FAIL** ({found[2]} points short) |" in row
    assert "<" not in markdown and ">" not in markdown
    for block in markdown.split("\n\n"):
        assert len({markdown_cells(row) for row in block.splitlines() if row.startswith("|")}) <= 1
    summary = markdown.split("### Details", 1)[0]  # the PR comment's block: verdict, gates, evidence
    assert "**verdict: faster**" in summary and "inventory sha256 " in summary and "- script: sha256 " in summary


def test_a_longer_tail_fails_the_tail_gate_while_the_median_is_unchanged(home: Home) -> None:
    """Every 10th step 1.5x slower with the bank: P95 and P99 regress, the median does not move. Seeded: the median's
    interval misses the truth in 5% of verifications, and this one must not be among them by chance."""
    script = ("steps", "65", "--bank-tail-factor", "1.5", "--seed", "1", "--counter", str(home.root / "counter"))
    result = aoe_runner(
        home, "verify", str(SIMULATOR), "--bank", "bank", "--repeats", "2", "--max-tail-regression", "2%", "--", *script
    )

    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert [line.split(":", 3)[2].strip() for line in errors] == ["P95 step time", "P99 step time"]
    assert all(" points beyond the allowed +2%" in line for line in errors)
    (saved,) = (home.root / "home" / "verifications").glob("*/report.json")
    report = json.loads(saved.read_text())
    assert report["comparison"]["verdict"] == "no significant change"
    p95 = report["gates"][0]
    assert p95["passed"] is False and 40 < p95["estimate_pct"] < 60 and p95["margin_pct"] < -30
    assert "verdict: no significant change" in result.stdout and "FAIL" in result.stdout


def test_speedup_gates_compare_the_lower_bound_tail_gates_the_upper_one() -> None:
    rng = random.Random(7)
    comparison = compare(_runs(rng, [50, 50.5, 49.5]), _runs(rng, [40, 40.4, 39.6]), 2.0)
    median, mean = comparison.change("median"), comparison.change("mean")
    exactly = (median.ci_low - 1) * 100
    at_bound = evaluate(comparison, Gates(min_speedup_pct=exactly, min_mean_speedup_pct=(mean.ci_high - 1) * 100))
    assert at_bound[0].passed and at_bound[0].margin_pct == pytest.approx(0)  # the bound itself is enough
    assert not at_bound[1].passed  # the mean's upper end does not count: its lower one is below
    assert (mean.speedup - 1) * 100 < at_bound[1].limit_pct
    p95, p99 = evaluate(comparison, Gates(max_tail_regression_pct=0))
    assert (p95.statistic, p99.statistic) == ("p95", "p99")
    assert p95.passed and p95.bound_pct == pytest.approx(comparison.change("p95").change_ci_high_pct) and p95.bound_pct < -15


def test_a_gate_the_estimate_passes_but_the_interval_does_not_says_more_runs_may_help() -> None:
    rng = random.Random(8)
    comparison = compare(_runs(rng, [50, 53]), _runs(rng, [46, 48]), 2.0)  # about 8% faster, noisy: two runs each
    (gate,) = evaluate(comparison, Gates(min_speedup_pct=5))
    assert gate.estimate_pct > 5 and not gate.passed
    assert "(the estimate itself passes; the interval is too wide" in gate.explanation
    assert "more --repeats narrow it" in gate.explanation
