"""`aoe-runner verify` output: a table for people, markdown for a pull request, JSON for tools.

The script, bank, run ids and a --step-pattern come from users and records: shown through safe_text.
"""

from __future__ import annotations

from tabulate import tabulate

from aoe_runner.render.safe_text import markdown as markdown_text
from aoe_runner.render.safe_text import visible
from aoe_runner.verify.session import VerifyReport
from aoe_runner.verify.stats import ArmSummary
from aoe_runner.verify.steps import BUILT_IN

_BUILT_IN_NAMES = frozenset(fmt.name for fmt in BUILT_IN)  # ours, written as markdown already


def render_verify(report: VerifyReport, markdown: bool = False) -> str:
    c = report.comparison
    style = "github" if markdown else "simple"
    heading = "## aoe-runner verify" if markdown else "aoe-runner verify"
    shown = markdown_text if markdown else visible
    step_format = report.step_format if report.step_format in _BUILT_IN_NAMES else shown(report.step_format)
    arms = tabulate([_arm_row(c.baseline), _arm_row(c.tuned)], headers=_ARM_HEADERS, tablefmt=style, disable_numparse=True)
    runs = tabulate(
        [[shown(r.run), r.arm, r.repeat, r.steps_printed, r.warmup_dropped, f"{r.median_ms:.3f}"] for r in report.runs],
        headers=["run", "arm", "repeat", "steps", "warm-up dropped", "median ms"],
        tablefmt=style,
        disable_numparse=True,
    )
    source = f"bank of tuning run {shown(report.tuning_run)}" if report.tuning_run else "bank"
    lines = [
        heading,
        "",
        f"script {shown(report.script)}; {source} {shown(report.bank)}",
        f"{report.repeats} runs per arm, interleaved; step times from {step_format}; warm-up: {report.warmup}",
        "",
        arms,
        "",
        f"speed-up (baseline / tuned): {c.speedup:.3f}x, {c.confidence:.0%} interval {c.ci_low:.3f}x to {c.ci_high:.3f}x "
        f"({c.bootstrap_samples:,} run-blocked bootstrap samples)",
        f"verdict: {c.verdict.value} ({c.explanation})",
        "",
        runs,
    ]
    return "\n".join(lines) + "\n"


_ARM_HEADERS = ["arm", "runs", "steps", "median ms", "p10 ms", "p90 ms", "run medians ms"]


def _arm_row(arm: ArmSummary) -> list[str]:
    medians = ", ".join(f"{value:.3f}" for value in arm.run_medians_ms)
    return [arm.arm, str(arm.runs), str(arm.steps), f"{arm.median_ms:.3f}", f"{arm.p10_ms:.3f}", f"{arm.p90_ms:.3f}", medians]
