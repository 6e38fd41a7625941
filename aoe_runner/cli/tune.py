"""`aoe-runner tune`: a training script (or, with --model, a model file) tuned by AOE, gated by preflight, supervised
and recorded."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aoe_runner.cli import completion
from aoe_runner.cli.options import THIS_PYTHON, Python, ScriptArguments, framework_option, split_names, whole_number
from aoe_runner.cli.terminal import run_store, terminal
from aoe_runner.common.exiting import leave
from aoe_runner.common.quantities import ascii_whole
from aoe_runner.common.words import count
from aoe_runner.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from aoe_runner.common.modes import TuneMode
    from aoe_runner.render.tune_progress import TerminalReporter
    from aoe_runner.runs.history import RunStore
    from aoe_runner.runs.manifest import RunManifest
    from aoe_runner.tune.request import TuneRequest

Script = Annotated[
    Path | None,
    typer.Argument(metavar="SCRIPT", help="The training script (.py, or any executable); none with --model.", show_default=False),
]
Mode = Annotated[
    str | None,
    typer.Option(
        "--mode", metavar="MODE", help="Required: op (also 2, opat) or subgraph (also 1, sgat).", autocompletion=completion.MODES
    ),
]
Bank = Annotated[Path | None, typer.Option("--bank", metavar="PATH", help="The knowledge bank (sets TUNE_BANK_PATH).")]
WorkDir = Annotated[
    Path | None,
    typer.Option("--work-dir", metavar="DIR", help="Sets ASCEND_WORK_PATH [default: a fresh directory in the run record]."),
]
TeParallel = Annotated[str | None, typer.Option("--te-parallel", metavar="N", help="Sets TE_PARALLEL_COMPILER, from 1 to 32.")]
RepeatTune = Annotated[bool, typer.Option("--repeat-tune", help="Sets REPEAT_TUNE=True.")]
Device = Annotated[str | None, typer.Option("--device", metavar="ID", help="Sets ASCEND_DEVICE_ID.")]
Timeout = Annotated[
    str | None, typer.Option("--timeout", metavar="DURATION", help="Stop the script after this long (e.g. 90m, 2h).")
]
Grace = Annotated[str, typer.Option("--grace", metavar="DURATION", help="Wait this long after SIGINT/SIGTERM before SIGKILL.")]
ModelMemory = Annotated[str | None, typer.Option("--model-memory", metavar="SIZE", help="Memory the model needs, for preflight.")]
Force = Annotated[bool, typer.Option("--force", help="Run even when preflight fails.")]
Rehash = Annotated[
    bool, typer.Option("--rehash", help="Read every bank file for the snapshot, not only those that look changed.")
]
Skip = Annotated[
    list[str] | None,
    typer.Option("--skip", metavar="CHECK[,CHECK]", help="Run even when these preflight checks fail (repeatable)."),
]
Framework = Annotated[str, framework_option("read from the script's imports")]
TuneOps = Annotated[
    Path | None,
    typer.Option("--tune-ops", metavar="FILE", help='Tune only these: {"tune_ops_name": [...], "tune_ops_type": [...]}.'),
]
AoeCli = Annotated[Path | None, typer.Option("--aoe", metavar="PATH", help="The offline aoe CLI [default: CANN's, or PATH].")]
Model = Annotated[
    Path | None, typer.Option("--model", metavar="FILE", help="Tune a model file with the offline aoe CLI instead of a script.")
]
Weight = Annotated[Path | None, typer.Option("--weight", metavar="FILE", help="--model: a Caffe model's .caffemodel.")]
ModelFramework = Annotated[
    str | None,
    typer.Option("--model-framework", metavar="NAME", help="--model: caffe, mindspore, tf or onnx [default: from the suffix]."),
]
Reload = Annotated[str | None, typer.Option("--reload", metavar="RUN", help="--model: resume RUN's interrupted subgraph tuning.")]
KeepWorkspace = Annotated[bool, typer.Option("--keep-workspace", help="--model: keep aoe_workspace/ in the record.")]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Print what a run would do and whether preflight lets it start; run nothing.")
]


# fmt: off
def tune(
    script: Script = None, arguments: ScriptArguments = None, mode: Mode = None, framework: Framework = "auto",
    bank: Bank = None, work_dir: WorkDir = None, te_parallel: TeParallel = None, repeat_tune: RepeatTune = False,
    device: Device = None, python: Python = THIS_PYTHON, timeout: Timeout = None, grace: Grace = "10s",
    model_memory: ModelMemory = None, tune_ops: TuneOps = None, aoe: AoeCli = None, model: Model = None,
    weight: Weight = None, model_framework: ModelFramework = None, reload: Reload = None,
    keep_workspace: KeepWorkspace = False, force: Force = False, rehash: Rehash = False, skip: Skip = None,
    dry_run: DryRun = False,
) -> int:
    """Tune a training script (or a model file) with AOE: preflight, device lock, live progress, a full run record."""
    from aoe_runner.cli.targets import tune_target
    from aoe_runner.common.quantities import optional_duration, parse_duration
    from aoe_runner.tune.request import TuneRequest

    chosen_mode, grace_s = _mode(mode), parse_duration(grace, "--grace")  # every bad value before any path is read
    timeout_s, threads = optional_duration(timeout, "--timeout"), _te_parallel(te_parallel)
    device_number = whole_number(device, "--device")
    target = tune_target(script, arguments, model, weight, model_framework, framework)
    request = TuneRequest(
        script=target.script, arguments=arguments or [], mode=chosen_mode, bank=bank, work_dir=work_dir,
        te_parallel=threads, repeat_tune=repeat_tune, device=device_number, python=python, timeout_s=timeout_s,
        grace_s=grace_s, model_memory=model_memory, force=force, rehash=rehash, skip=split_names(skip),
        framework=target.framework, framework_source=target.source, tune_ops=tune_ops, aoe_cli=aoe, model=target.model,
        reload_of=reload, keep_workspace=keep_workspace, framework_note=target.describe(),
    )
    store = run_store()
    return _dry_run(request, store) if dry_run else _run(request, store)
# fmt: on


def _mode(mode: str | None) -> TuneMode:
    from aoe_runner.common.modes import TuneMode

    if mode is None:
        raise UsageError("tune needs --mode op or --mode subgraph")
    return TuneMode.parse(mode)


def _te_parallel(text: str | None) -> int | None:
    """--te-parallel as a whole number in AOE's range."""
    from aoe_runner.tune.request import check_te_parallel

    if text is None:
        return None
    value = ascii_whole(text)
    if value is None:
        raise UsageError(f"--te-parallel: {text!r} is not a whole number from 1 to 32")
    return check_te_parallel(value)


def _dry_run(request: TuneRequest, store: RunStore) -> int:
    from aoe_runner.tune.session import dry_run

    plan = dry_run(request, store)
    terminal.result(plan.describe())
    return ExitCode.OK if plan.would_start else ExitCode.FINDING


def _run(request: TuneRequest, store: RunStore) -> int:
    from aoe_runner.render.tune_progress import TerminalReporter
    from aoe_runner.tune.relay import TerminalOutput
    from aoe_runner.tune.session import run_tune
    from aoe_runner.tune.signals import CountedSignals

    reporter = TerminalReporter(terminal, live=terminal.err_is_terminal() and not terminal.quiet)
    # no reader, however slow, can block the run; until the run starts, SIGTERM and SIGHUP cancel like Ctrl-C, and
    # from then on every signal is counted until the command ends (the run is recorded, whatever arrives)
    with CountedSignals(cancelling=True) as signals:
        with TerminalOutput() as output:
            try:
                manifest = run_tune(request, reporter, store, output, signals=signals)
            except KeyboardInterrupt as cancel:  # said here, through the writer: a full stderr cannot hold up the exit
                name = cancel.args[0] if cancel.args else "SIGINT"
                terminal.error(f"interrupted ({name}) before the script started; nothing was recorded")
                return ExitCode.INTERRUPTED
            _say_how_it_went(reporter, manifest)
        code = manifest.exit_code if manifest.exit_code is not None else ExitCode.INTERNAL
        leave(code)  # as the program, it ends here: a signal from now on cannot change how the recorded run ends
    return code


def _say_how_it_went(reporter: TerminalReporter, manifest: RunManifest) -> None:
    reporter.finish()
    why = f" ({manifest.stopped_by})" if manifest.stopped_by else ""
    terminal.outcome(
        f"aoe-runner: run {manifest.id} {manifest.status.value}{why}, exit {manifest.exit_code}; "
        f"{count(len(manifest.result_files), 'result file')}; see 'aoe-runner runs show {manifest.id}'"
    )
    if manifest.late_signal:
        terminal.info(f"aoe-runner: {manifest.late_signal} arrived after the script ended; the run was recorded first")
