"""How a run switches AOE on, framework by framework (AOE.md §1, §6), as the phases it supervises:

- TensorFlow: the script as it is; the variables (AOE_MODE and the others) are the switch.
- MindSpore: the script through the launcher (frameworks/launcher.py), which calls MindSpore's own switch first.
- PyTorch: the script through the launcher, which calls `torch_npu.npu.set_aoe(<work>/dump)` first, then the
  offline CLI on the dump (`aoe --job_type=2 --model_path=<work>/dump`).
- A model file: the offline CLI on it (`aoe --model=M --job_type=1|2`).

The offline CLI runs in the work directory, so its result files and its aoe_workspace/ land there. Once it ends,
the tuned models go into the record's tuned/ and the workspace is measured. A work directory inside aoe-runner's
records is aoe-runner's: its tuned models are moved, and its workspace is removed unless --keep-workspace, or the
run did not succeed (an interrupted subgraph tuning resumes from it with --reload). A --work-dir of the user's is
the user's: the tuned models written during the run are copied, and nothing there is moved or removed. The
workspace is walked without following a symbolic link, so nothing outside it is ever taken. PyTorch's graph dump
goes into the run's record, fresh for every run.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import aoe_runner.frameworks
from aoe_runner.common.files import tree_bytes
from aoe_runner.common.regular_files import read_with_status
from aoe_runner.errors import ExitCode, InputError
from aoe_runner.frameworks.kinds import Framework
from aoe_runner.frameworks.offline import WORKSPACE, dump_command, model_command, tuned_models
from aoe_runner.runs.flows import OfflineRecord, PhaseRecord, SwitchRecord
from aoe_runner.runs.manifest import RunManifest, RunStatus
from aoe_runner.tune.request import TuneRequest, script_command

LAUNCHER = Path(aoe_runner.frameworks.__file__).resolve().parent / "launcher.py"
SWITCH_REPORT = "switch.json"  # in the run's directory: what the launcher did
DUMP = "dump"  # in the work directory: PyTorch's graph dump
TUNED = "tuned"  # in the run's directory: the tuned models kept
TF_TUNE_OPS_VARIABLE = "AOE_RUNNER_TUNE_OPS_FILE"
MAX_SWITCH_REPORT = 64 * 1024


@dataclass
class PlannedRun:
    """The phases of one run and what records them."""

    phases: list[PhaseRecord]
    flow: FrameworkFlow
    environment: dict[str, str] = field(default_factory=dict)  # variables the flow adds
    notes: list[str] = field(default_factory=list)  # what the user must know before it starts

    @property
    def command(self) -> list[str]:
        return self.phases[0].command


def plan_run(request: TuneRequest, run_dir: Path, work_dir: Path, cli: str | None, records: Path) -> PlannedRun:
    """The phases `request` runs, with the offline CLI at `cli` (found beforehand where the run needs it); `records`:
    the directory of every run record (a work directory inside it is aoe-runner's own)."""
    ours = work_dir.resolve().is_relative_to(records.resolve())
    flow = FrameworkFlow(run_dir, work_dir, request.keep_workspace, ours=ours, since=time.time())
    tune_ops = request.tune_ops.resolve() if request.tune_ops is not None else None  # the CLI runs elsewhere
    if request.model is not None:
        assert cli is not None
        command = model_command(cli, request.model, request.mode, tune_ops, request.reload_of is not None)
        flow.offline = OfflineRecord(
            model=str(request.model.path),
            model_framework=request.model.framework.value if request.model.framework else None,
            weight=str(request.model.weight) if request.model.weight else None,
            reload_of=request.reload_of,
        )
        return PlannedRun([PhaseRecord(name="aoe", command=command, working_directory=str(work_dir))], flow)
    script = script_command(request.script, request.python, request.arguments)
    if request.framework is Framework.MINDSPORE:
        flow.switch_report = run_dir / SWITCH_REPORT
        switch = ["--mindspore-job-type", request.mode.aoe_mode]
        return PlannedRun([PhaseRecord(name="script", command=_launched(request, flow.switch_report, switch))], flow)
    if request.framework is Framework.PYTORCH:
        assert cli is not None
        flow.switch_report, flow.dump = run_dir / SWITCH_REPORT, run_dir / DUMP
        flow.offline = OfflineRecord(model=str(flow.dump))
        first = PhaseRecord(name="dump", command=_launched(request, flow.switch_report, ["--torch-dump", str(flow.dump)]))
        second = PhaseRecord(name="aoe", command=dump_command(cli, flow.dump, tune_ops), working_directory=str(work_dir))
        return PlannedRun([first, second], flow)
    planned = PlannedRun([PhaseRecord(name="script", command=script)], flow)
    if tune_ops is not None:
        planned.environment[TF_TUNE_OPS_VARIABLE] = str(tune_ops)
        planned.notes.append(
            "--tune-ops: TensorFlow reads the operator list only from a session option set in the script: "
            f'custom_op.parameter_map["aoe_config_file"].s = tf.compat.as_bytes(os.environ["{TF_TUNE_OPS_VARIABLE}"]) '
            f'(TF 1.15), or npu.global_options().aoe_config.aoe_config_file = os.environ["{TF_TUNE_OPS_VARIABLE}"] '
            "before npu.open() (TF 2.6); without it every operator is tuned"
        )
    return planned


def _launched(request: TuneRequest, report: Path, switch: list[str]) -> list[str]:
    return launched(request.python, report, switch, request.script, request.arguments)


def launched(python: str, report: Path, switch: list[str], script: Path, arguments: list[str]) -> list[str]:
    """The script run through the launcher by the script's interpreter, after `switch` (launcher.py's options)."""
    return [python, str(LAUNCHER), "--report", str(report), *switch, "--", str(script.resolve()), *arguments]


@dataclass
class FrameworkFlow:
    """The checks between phases and the flow's part of the record (phases.Flow)."""

    run_dir: Path
    work_dir: Path
    keep_workspace: bool
    ours: bool = True  # the work directory is inside aoe-runner's records (else a --work-dir of the user's)
    since: float = 0.0  # when the run was planned: a user's tuned model older than this is not the run's
    switch_report: Path | None = None
    dump: Path | None = None
    offline: OfflineRecord | None = None
    failure: tuple[ExitCode, str] | None = None  # what ended the run although every phase that ran exited 0

    def after_phase(self, phase: PhaseRecord) -> str | None:
        if phase.name == "dump" and self.dump is not None and not _holds_files(self.dump):
            reason = (
                f"the script ran, but no graph was dumped into {self.dump}: torch_npu dumps only what runs on the NPU, "
                "and only from single-device scripts; the offline CLI was not run"
            )
            self.failure = (ExitCode.FINDING, reason)
            return reason
        return None

    def finish(self, manifest: RunManifest) -> None:
        """The switch the launcher threw, the flow's verdict, and the offline CLI's tuned models and workspace."""
        try:
            self._finish(manifest)
        except OSError as error:  # the outcome is recorded whatever this part of the record meets
            manifest.warnings.append(f"recording the tuned models and workspace failed: {error.strerror or error}")

    def _finish(self, manifest: RunManifest) -> None:
        manifest.switch = self._switch(manifest)
        if manifest.switch is not None and manifest.switch.error is not None:
            self.failure = (ExitCode.BAD_INPUT, f"cannot switch AOE on: {manifest.switch.error}")
        if self.failure is not None and manifest.stopped_by is None:
            code, reason = self.failure
            manifest.status, manifest.exit_code = RunStatus.FAILED, code.value
            if reason not in manifest.warnings:
                manifest.warnings.append(reason)
        if self.offline is not None and any(phase.name == "aoe" and phase.started_at for phase in manifest.phases):
            self._keep_tuned(manifest.status is RunStatus.SUCCEEDED)
        manifest.offline = self.offline

    def _switch(self, manifest: RunManifest) -> SwitchRecord | None:
        if self.switch_report is None:
            return None
        try:  # a regular file of a sane size only: the script could have put a FIFO or a link to /dev/zero there
            data, _ = read_with_status(str(self.switch_report), MAX_SWITCH_REPORT)
            written = json.loads(data)
            return SwitchRecord(
                framework=str(written["framework"]),
                version=_text(written.get("version")),
                calls=[str(call) for call in written.get("calls", [])],
                python=_text(written.get("python")),
                error=_text(written.get("error")),
            )
        except (InputError, ValueError, KeyError, TypeError, AttributeError):
            if manifest.phases and manifest.phases[0].started_at is not None:
                manifest.warnings.append(
                    f"the launcher left no report of the AOE switch in {self.switch_report}: whether it was thrown is unknown"
                )
            return None

    def _keep_tuned(self, succeeded: bool) -> None:
        assert self.offline is not None
        workspace = self.work_dir / WORKSPACE
        for entry, model in tuned_models(self.work_dir):
            if not self.ours and model.stat().st_mtime < self.since:
                continue  # an older tuning's, in the user's directory
            target = self.run_dir / TUNED / entry / model.name  # per workspace entry: two models of one name both stay
            target.parent.mkdir(parents=True, exist_ok=True)
            if self.ours:
                shutil.move(model, target)
            else:
                shutil.copy2(model, target)
            self.offline.tuned_models.append(target.relative_to(self.run_dir).as_posix())
        if not workspace.is_dir() or workspace.is_symlink():
            return
        self.offline.workspace = str(workspace)
        self.offline.workspace_bytes = tree_bytes(workspace)
        self.offline.workspace_kept = self.keep_workspace or not succeeded or not self.ours
        if not self.offline.workspace_kept:
            shutil.rmtree(workspace, ignore_errors=True)


def _holds_files(directory: Path) -> bool:
    try:
        return any(path.is_file() for path in directory.rglob("*"))
    except OSError:
        return False


def _text(value: object) -> str | None:
    return None if value is None else str(value)
