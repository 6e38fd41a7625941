"""`aoe-runner verify` output: a table for people, markdown for a pull request, CSV per run, JSON for tools.

The markdown opens with a short block for a PR comment (the verdict, each gate with its margin, the evidence
hashes); the details follow. The script, banks, run ids, logs, result files, host facts and a --step-pattern come
from users and records: shown through safe_text. Our own markdown uses no HTML, so no `<` or `>` either.
"""

from __future__ import annotations

import csv
import io

from aoe_runner.common.colour import VERDICTS, YELLOW, paint
from aoe_runner.common.safe_text import csv_cell, visible
from aoe_runner.common.safe_text import markdown as markdown_text
from aoe_runner.render.table import Column
from aoe_runner.render.table import render as render_table
from aoe_runner.render.width import wrap_line
from aoe_runner.verify.evidence import Evidence
from aoe_runner.verify.gates import GateResult
from aoe_runner.verify.report import VerifyReport
from aoe_runner.verify.stats import ArmSummary, Change, Comparison
from aoe_runner.verify.steps import BUILT_IN

_BUILT_IN_NAMES = frozenset(fmt.name for fmt in BUILT_IN)  # ours, written as markdown already
_STATISTIC = {"median": "median", "mean": "mean", "p95": "P95", "p99": "P99"}
_RULE = {"min-speedup": "at least", "min-mean-speedup": "at least", "max-tail-regression": "at most"}
CSV_COLUMNS = (
    "verification", "run", "arm", "repeat", "steps_printed", "warmup_dropped", "steps_kept", "median_ms", "mean_ms",
    "p95_ms", "p99_ms", "bank_sha256", "log",
)  # fmt: skip


def render_verify(report: VerifyReport, markdown: bool = False, width: int | None = None, colour: bool = False) -> str:
    """The report as a person reads it on a terminal `width` columns wide (None: full lines), or as markdown."""
    return _Renderer(markdown, width, colour).report(report)


def render_verify_csv(report: VerifyReport) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in report.runs:
        writer.writerow(
            [csv_cell(report.verification), csv_cell(r.run), r.arm, r.repeat, r.steps_printed, r.warmup_dropped,
             r.steps_printed - r.warmup_dropped, r.median_ms, r.mean_ms, r.p95_ms, r.p99_ms, r.bank_sha256, csv_cell(r.log)]
        )  # fmt: skip
    return buffer.getvalue()


class _Renderer:
    def __init__(self, markdown: bool, width: int | None = None, colour: bool = False) -> None:
        self.markdown = markdown
        self.colour = colour and not markdown
        self.width = None if markdown else width
        self.shown = markdown_text if markdown else visible

    def report(self, report: VerifyReport) -> str:
        c, setup, evidence = report.comparison, self._prose(self._setup(report)), self._prose(self._evidence(report.evidence))
        gates, warnings, runs = self._gates(report.gates), self._prose(self._warnings(report.warnings)), self._runs(report)
        if self.markdown:  # the PR comment's block first, the details after it
            heading = f"## aoe-runner verify: {_outcome(report)}"
            blocks = [
                heading,
                self._verdict(c),
                gates,
                evidence,
                warnings,
                "### Details",
                setup,
                self._arms(c),
                self._changes(c),
                runs,
            ]
        else:
            blocks = [
                "aoe-runner verify",
                setup,
                self._arms(c),
                self._changes(c),
                self._prose(self._verdict(c)),
                gates,
                evidence,
                warnings,
                runs,
            ]
        return "\n\n".join(block for block in blocks if block) + "\n"

    def _setup(self, report: VerifyReport) -> str:
        shown = self.shown
        step_format = report.step_format if report.step_format in _BUILT_IN_NAMES else shown(report.step_format)
        source = f"bank of tuning run {shown(report.tuning_run)}" if report.tuning_run else "bank"
        source = f"published bank {shown(report.published)}" if report.published else source
        return (
            f"script {shown(report.script)}; {source} {shown(report.bank)}\n"
            f"{report.repeats} runs per arm, interleaved; step times from {step_format}; warm-up: {report.warmup}"
        )

    def _table(self, rows: list[list[str]], columns: list[Column]) -> str:
        if self.markdown:
            from tabulate import tabulate  # markdown only: tabulate and wcwidth cost 30 ms to import

            return tabulate(rows, headers=[c.header for c in columns], tablefmt="github", disable_numparse=True)
        return render_table(columns, rows, self.width)

    def _painted(self, verdict: str) -> str:
        """The verdict in its colour on a terminal: faster green, slower red, anything else yellow."""
        return paint(verdict, VERDICTS.get(verdict, YELLOW)) if self.colour else verdict

    def _prose(self, text: str) -> str:
        """Lines wrapped to the terminal between words, the later ones of each indented."""
        if self.width is None:
            return text
        return "\n".join(wrap_line(line, self.width, "  ") for line in text.split("\n"))

    def _arms(self, c: Comparison) -> str:
        return self._table([_arm_row(c.baseline), _arm_row(c.tuned)], ARM_COLUMNS)

    def _changes(self, c: Comparison) -> str:
        level = f"{c.confidence:.0%}"
        # the intervals wrap between their figures ("1.249x" / "to 1.262x"), never inside one
        columns = [Column("statistic"), *map(Column.number, ("baseline ms", "tuned ms", "speed-up")),
                   Column.prose(f"{level} interval"), Column.prose("tuned vs baseline"),
                   Column.number("detectable", optional=True)]  # fmt: skip
        return self._table([_change_row(change) for change in c.changes], columns)

    def _verdict(self, c: Comparison) -> str:
        covers = "run-to-run and step-to-step variation" if c.interval_covers == "runs and steps" else "step noise only"
        bold = "**" if self.markdown else ""
        return (
            f"speed-up (baseline / tuned): {c.speedup:.3f}x, {c.confidence:.0%} interval {c.ci_low:.3f}x to "
            f"{c.ci_high:.3f}x ({c.bootstrap_samples:,} run-blocked bootstrap samples; the intervals cover {covers})\n"
            f"{bold}verdict: {self._painted(c.verdict.value)}{bold} ({c.explanation})"
        )

    def _gates(self, gates: list[GateResult]) -> str:
        if not gates:
            return ""
        rows = [
            [gate.gate, _STATISTIC[gate.statistic], f"{_RULE[gate.gate]} {gate.limit_pct:+g}%", f"{gate.estimate_pct:+.1f}%",
             f"{gate.ci_low_pct:+.1f}% to {gate.ci_high_pct:+.1f}%", _gate_result(gate, self.markdown)]
            for gate in gates
        ]  # fmt: skip
        failed = [gate.explanation for gate in gates if not gate.passed]
        lines = [self._table(rows, GATE_COLUMNS)]
        lines += [self._prose(f"{'- ' if self.markdown else ''}failed: {explanation}") for explanation in failed]
        return "\n\n".join(lines) if self.markdown else "\n".join(lines)

    def _evidence(self, e: Evidence) -> str:
        shown, short = self.shown, (lambda digest: digest) if self.markdown else (lambda digest: digest[:12])
        git = f", git {shown(e.git_commit)}" if e.git_commit else ""
        f = e.fingerprint
        lines = [("script", f"sha256 {short(e.script_sha256)}{git}")]
        for arm in e.banks:
            changed = "" if arm.unchanged else "; changed between the arm's runs"
            files = f"{arm.files} file{'' if arm.files == 1 else 's'}"
            lines.append((arm.arm, f"{shown(arm.bank)}: {files}, inventory sha256 {short(arm.inventory_sha256)}{changed}"))
        lines += [("result", f"{shown(result.path)} (sha256 {short(result.sha256)})") for result in e.result_files]
        host = (
            f"{shown(f.hostname)}, CANN {shown(f.cann_version or 'unknown')}, SoC {shown(f.soc or 'unknown')}, "
            f"driver {shown(f.driver_version or 'unknown')}, Python {shown(f.python)}"
        )
        lines.append(("host", host))
        if self.markdown:
            return "evidence:\n\n" + "\n".join(f"- {label}: {value}" for label, value in lines)
        return "evidence:\n" + "\n".join(f"  {label:<10} {value}" for label, value in lines)

    def _warnings(self, warnings: list[str]) -> str:
        if not warnings:
            return ""
        prefix = "- " if self.markdown else "  "
        return "warnings:\n" + ("\n" if self.markdown else "") + "\n".join(f"{prefix}{self.shown(w)}" for w in warnings)

    def _runs(self, report: VerifyReport) -> str:
        rows = [
            [self.shown(r.run), r.arm, str(r.repeat), str(r.steps_printed), str(r.warmup_dropped), f"{r.median_ms:.3f}"]
            for r in report.runs
        ]
        return self._table(rows, RUN_COLUMNS)


def _outcome(report: VerifyReport) -> str:
    failed = sum(not gate.passed for gate in report.gates)
    if not report.gates:
        return report.comparison.verdict.value
    if failed:
        return f"{failed} of {len(report.gates)} gates failed"
    return f"all {len(report.gates)} gates passed"


def _gate_result(gate: GateResult, markdown: bool) -> str:
    word = "pass" if gate.passed else "FAIL"
    word = f"**{word}**" if markdown and not gate.passed else word
    how = "to spare" if gate.passed else "short"
    return f"{word} ({abs(gate.margin_pct):.1f} points {how})"


ARM_COLUMNS = [
    Column("arm"),
    *map(Column.number, ("runs", "steps", "median ms", "p10 ms", "p90 ms")),
    Column.prose("run medians ms"),
]
GATE_COLUMNS = [
    Column("gate"), Column("statistic"), Column("required of the bound"), Column.number("estimate"), Column("interval"),
    Column.prose("result"),
]  # fmt: skip
RUN_COLUMNS = [Column("run"), Column("arm"), Column.number("repeat"), Column.number("steps"),
               Column.number("warm-up dropped", optional=True), Column.number("median ms")]  # fmt: skip


def _arm_row(arm: ArmSummary) -> list[str]:
    medians = ", ".join(f"{value:.3f}" for value in arm.run_medians_ms)
    return [arm.arm, str(arm.runs), str(arm.steps), f"{arm.median_ms:.3f}", f"{arm.p10_ms:.3f}", f"{arm.p90_ms:.3f}", medians]


def _change_row(change: Change) -> list[str]:
    return [
        _STATISTIC[change.statistic],
        f"{change.baseline_ms:.3f}",
        f"{change.tuned_ms:.3f}",
        f"{change.speedup:.3f}x",
        f"{change.ci_low:.3f}x to {change.ci_high:.3f}x",
        f"{change.change_pct:+.1f}% ({change.change_ci_low_pct:+.1f}% to {change.change_ci_high_pct:+.1f}%)",
        f"{change.detectable_pct:.1f}%",
    ]
