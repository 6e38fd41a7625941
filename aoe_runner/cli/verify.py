"""`aoe-runner verify`: an A/B proof that a tuned bank makes training faster, with a verdict and gates."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aoe_runner.cli import completion
from aoe_runner.cli.options import (
    CSV,
    HTML,
    JSON,
    MARKDOWN,
    TABLE,
    THIS_PYTHON,
    Python,
    ScriptArguments,
    emit,
)
from aoe_runner.cli.pages import formatter_for
from aoe_runner.cli.terminal import run_store, terminal
from aoe_runner.errors import ExitCode

FORMATS = (TABLE, MARKDOWN, CSV, JSON, HTML)
Script = Annotated[
    Path | None, typer.Argument(metavar="SCRIPT", help="The training script (not with --run).", show_default=False)
]
Bank = Annotated[
    Path | None,
    typer.Option("--bank", metavar="PATH", help="The tuned bank (TUNE_BANK_PATH) [default with --run: the run's]."),
]
Published = Annotated[
    str | None,
    typer.Option(
        "--published",
        metavar="NAME[@N]",
        help="The bank at --bank is this published version, as bank pull put it: checked before any run.",
    ),
]
Run = Annotated[
    str | None,
    typer.Option(
        "--run",
        metavar="RUN",
        help="Take the script, its arguments and the bank from a tuning run.",
        autocompletion=completion.run_ids,
    ),
]
Repeats = Annotated[int, typer.Option("--repeats", min=1, metavar="N", help="Runs per arm, interleaved A B A B.")]
Warmup = Annotated[
    int | None,
    typer.Option("--warmup", min=0, metavar="K", help="Leading steps to drop per run [default: up to 5, at most a quarter]."),
]
StepPattern = Annotated[
    str | None, typer.Option("--step-pattern", metavar="REGEX", help="A regex with one capture group: the step time.")
]
Unit = Annotated[str | None, typer.Option("--unit", metavar="UNIT", help="ms, s or steps/s for --step-pattern.")]
Threshold = Annotated[str, typer.Option("--threshold", metavar="PCT", help="Exit 1 when slower by more than this.")]
MinSpeedup = Annotated[
    str | None,
    typer.Option("--min-speedup", metavar="PCT", help="Gate: the median speed-up's interval must start at PCT or above."),
]
MinMeanSpeedup = Annotated[
    str | None, typer.Option("--min-mean-speedup", metavar="PCT", help="Gate: the same for the mean step time's speed-up.")
]
MaxTailRegression = Annotated[
    str | None,
    typer.Option(
        "--max-tail-regression", metavar="PCT", help="Gate: P95 and P99 may be at most PCT slower, at the interval's end."
    ),
]
Format = Annotated[
    str, typer.Option("--format", "-f", metavar="FORMAT", help="table, markdown, csv (per run), json or html (with -o FILE).")
]
Output = Annotated[str | None, typer.Option("--output", "-o", metavar="FILE", help="Write the report here (- is stdout).")]
Device = Annotated[int | None, typer.Option("--device", metavar="ID", help="Sets ASCEND_DEVICE_ID.")]
Timeout = Annotated[str | None, typer.Option("--timeout", metavar="DURATION", help="Limit for each run.")]
Grace = Annotated[str, typer.Option("--grace", metavar="DURATION", help="SIGTERM-to-SIGKILL wait.")]


def verify(
    script: Script = None, arguments: ScriptArguments = None, bank: Bank = None, run: Run = None, repeats: Repeats = 3,
    warmup: Warmup = None, step_pattern: StepPattern = None, unit: Unit = None, threshold: Threshold = "2%",
    min_speedup: MinSpeedup = None, min_mean_speedup: MinMeanSpeedup = None, max_tail_regression: MaxTailRegression = None,
    output_format: Format = "table", output: Output = None, python: Python = THIS_PYTHON, device: Device = None,
    timeout: Timeout = None, grace: Grace = "10s", published: Published = None,
) -> int:  # fmt: skip
    """Prove that the tuned bank makes training faster: baseline and tuned runs, interleaved, with a verdict and gates."""
    from aoe_runner.common.quantities import optional_duration, optional_percent, parse_duration, parse_percent
    from aoe_runner.render.tune_progress import TerminalReporter
    from aoe_runner.verify.gates import Gates
    from aoe_runner.verify.session import VerifyRequest, run_verify

    formatter = formatter_for(output_format, False, FORMATS, output)  # a page's -o FILE is checked before any run
    label = _published_bank(published, bank, run) if published is not None else None
    gates = Gates(optional_percent(min_speedup, "--min-speedup"), optional_percent(min_mean_speedup, "--min-mean-speedup"),
                  optional_percent(max_tail_regression, "--max-tail-regression"))  # fmt: skip
    request = VerifyRequest(
        script=script, arguments=arguments or [], bank=bank, run=run, repeats=repeats, warmup=warmup, step_pattern=step_pattern,
        unit=unit, threshold_pct=parse_percent(threshold, "--threshold"), gates=gates, python=python, device=device,
        timeout_s=optional_duration(timeout, "--timeout"), grace_s=parse_duration(grace, "--grace"), published=label,
    )  # fmt: skip
    report = run_verify(request, TerminalReporter(terminal, live=False), run_store())
    emit(terminal, formatter.verify(report), output)
    for failed in (gate for gate in report.gates if not gate.passed):
        terminal.error(f"gate {failed.gate} failed: {failed.explanation}")
    return ExitCode.FINDING if report.slower or not report.gates_passed else ExitCode.OK


def _published_bank(published: str, bank: Path | None, run: str | None) -> str:
    """NAME@N, once the bank at --bank is checked to hold exactly that version's files."""
    from aoe_runner.errors import UsageError
    from aoe_runner.releases.api import check_in_place
    from aoe_runner.releases.catalog import catalog
    from aoe_runner.releases.version import parse_reference

    if bank is None or run is not None:
        raise UsageError("--published needs --bank PATH (where bank pull put the version), and no --run")
    store = run_store(reading=True)
    version = catalog(store.home, terminal.warning).get(*parse_reference(published))
    check_in_place(store, version, bank)
    return version.label
