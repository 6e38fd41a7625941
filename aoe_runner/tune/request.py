"""What `aoe-runner tune` was asked to do, and the exact command and environment that follow from it."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aoe_runner.common.quantities import ascii_digits
from aoe_runner.errors import InputError, UsageError
from aoe_runner.frameworks.kinds import Framework, Scenario
from aoe_runner.frameworks.offline import OfflineModel
from aoe_runner.preflight.plan import TuneMode

TE_PARALLEL_RANGE = range(1, 33)  # AOE.md §1: TE_PARALLEL_COMPILER is 1..32
DEFAULT_GRACE_S = 10.0


@dataclass
class TuneRequest:
    script: Path
    arguments: list[str] = field(default_factory=list)
    mode: TuneMode = TuneMode.OP
    bank: Path | None = None
    work_dir: Path | None = None  # None: a fresh directory inside the run record
    te_parallel: int | None = None
    repeat_tune: bool = False
    device: int | None = None
    python: str = sys.executable
    timeout_s: float | None = None
    grace_s: float = DEFAULT_GRACE_S
    model_memory: str | None = None
    force: bool = False
    skip: tuple[str, ...] = ()  # preflight checks whose failures and warnings do not stop the run
    rehash: bool = False  # read every bank file, even those the last inventory says are unchanged
    framework: Framework | None = Framework.TF  # None: a model file for the offline CLI (`model`)
    framework_source: str = "--framework"  # how it was chosen, for the screen and the record
    tune_ops: Path | None = None  # {"tune_ops_name": [...], "tune_ops_type": [...]}: tune only these operators
    aoe_cli: Path | None = None  # --aoe: the offline CLI to run
    model: OfflineModel | None = None  # `tune --model`
    reload_of: str | None = None  # --reload RUN: resume that run's interrupted subgraph tuning
    keep_workspace: bool = False  # keep the offline CLI's aoe_workspace/ in the record
    framework_note: str | None = None  # how the framework (or the model file) was read, said as the run starts

    def __post_init__(self) -> None:
        if self.te_parallel is not None:
            check_te_parallel(self.te_parallel)
        if self.device is not None and self.device < 0:
            raise UsageError(f"--device: {self.device} is not a device id (0, 1, ...)")
        if self.framework is Framework.PYTORCH and self.mode is TuneMode.SUBGRAPH:
            raise UsageError(
                "--mode subgraph: PyTorch has operator tuning only (torch_npu dumps graphs for the offline CLI's "
                "--job_type=2); tune its operators with --mode op"
            )
        if self.framework is Framework.MINDSPORE and self.tune_ops is not None:
            raise UsageError(
                "--tune-ops: MindSpore's AOE switch takes only a job type, no operator list (aoe_config documents "
                "job_type alone); tune every operator, or tune an exported .air model with --model"
            )
        if self.reload_of is not None and (self.model is None or self.mode is not TuneMode.SUBGRAPH):
            raise UsageError("--reload resumes an offline subgraph tuning: use it with --model and --mode subgraph")
        if self.reload_of is not None and self.work_dir is not None:
            raise UsageError("--reload runs in the work directory of the run it resumes: give no --work-dir with it")
        if not self.uses_cli and (self.aoe_cli is not None or self.keep_workspace):
            option = "--aoe" if self.aoe_cli is not None else "--keep-workspace"
            raise UsageError(f"{option} is for the offline aoe CLI: a PyTorch script or --model; {self.framework_name} runs none")

    @property
    def framework_name(self) -> str:
        return self.framework.value if self.framework is not None else "a model file"

    @property
    def scenario(self) -> Scenario:
        return Scenario.of(self.framework, self.model is not None)

    @property
    def uses_cli(self) -> bool:
        """Does the run need the offline `aoe` CLI (a model file, or a PyTorch dump)?"""
        return self.model is not None or self.framework is Framework.PYTORCH

    def command(self) -> list[str]:
        return script_command(self.script, self.python, self.arguments)

    def check_script(self) -> None:
        if self.tune_ops is not None and not self.tune_ops.is_file():
            raise InputError(str(self.tune_ops), "--tune-ops: no such file")
        if self.model is not None:
            if not self.model.path.is_file():
                raise InputError(str(self.model.path), "no such model file")
            return
        check_script(self.script, self.python)
        if self.framework in (Framework.MINDSPORE, Framework.PYTORCH) and self.script.suffix != ".py":
            raise UsageError(
                f"{self.script}: {self.framework.value}'s AOE switch is a Python call made before the script runs, "
                "so the script must be the .py file itself (not a wrapper)"
            )

    def device_id(self, base: Mapping[str, str]) -> int:
        return device_id(self.device, base)

    def environment_changes(self, base: Mapping[str, str], work_dir: Path) -> dict[str, str]:
        """Every variable the script gets that differs from aoe-runner's own environment."""
        wanted = {
            "ASCEND_WORK_PATH": str(work_dir),
            "PYTHONUNBUFFERED": "1",  # output arrives as it is printed, not at exit
        }
        if self.scenario is Scenario.TRAINING:  # the offline CLI takes the mode as --job_type
            wanted["AOE_MODE"] = self.mode.aoe_mode
        if self.bank is not None:
            wanted["TUNE_BANK_PATH"] = str(self.bank.resolve())
        if self.te_parallel is not None:
            wanted["TE_PARALLEL_COMPILER"] = str(self.te_parallel)
        if self.repeat_tune:
            wanted["REPEAT_TUNE"] = "True"
        if self.device is not None:
            wanted["ASCEND_DEVICE_ID"] = str(self.device)
        return {name: value for name, value in wanted.items() if base.get(name) != value}


def check_te_parallel(value: int) -> int:
    if value not in TE_PARALLEL_RANGE:
        raise UsageError(f"--te-parallel: {value} is outside 1..32 (AOE's TE_PARALLEL_COMPILER range)")
    return value


def script_command(script: Path, python: str, arguments: list[str]) -> list[str]:
    """A `.py` script runs under the interpreter; anything else is executed directly. No shell either way."""
    path = str(script.resolve())
    return [python, path, *arguments] if script.suffix == ".py" else [path, *arguments]


def check_script(script: Path, python: str) -> None:
    """Everything that would stop the script from starting, found before anything is created."""
    if not script.is_file():
        raise InputError(str(script), "no such training script")
    if script.suffix != ".py" and not os.access(script, os.X_OK):
        raise InputError(str(script), "not executable (chmod +x it, or give a .py script)")
    if script.suffix == ".py" and shutil.which(python) is None:
        raise InputError(python, "--python: no such interpreter, or it is not executable")


def device_id(explicit: int | None, base: Mapping[str, str]) -> int:
    """The physical device whose lock a run takes: the logical one (--device, else the inherited ASCEND_DEVICE_ID,
    else 0) as ASCEND_RT_VISIBLE_DEVICES maps it (`3,5` makes physical 5 the process's logical 1; AOE.md §6)."""
    logical = explicit
    if logical is None:
        inherited = base.get("ASCEND_DEVICE_ID", "0").strip()
        logical = int(inherited) if ascii_digits(inherited) else None
        if logical is None:
            raise UsageError(f"ASCEND_DEVICE_ID={inherited!r} is not a device id; pass --device")
    visible = base.get("ASCEND_RT_VISIBLE_DEVICES", "").strip()
    if not visible:
        return logical
    physical = [part.strip() for part in visible.split(",")]
    if not all(ascii_digits(part) for part in physical):
        raise UsageError(f"ASCEND_RT_VISIBLE_DEVICES={visible!r} is not a list of device ids")
    if logical >= len(physical):
        raise UsageError(f"device {logical} is not visible: ASCEND_RT_VISIBLE_DEVICES={visible!r} shows {len(physical)}")
    return int(physical[logical])
