"""What `aoe-runner tune` was asked to do, and the exact command and environment that follow from it."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aoe_runner.errors import InputError, UsageError
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

    def __post_init__(self) -> None:
        if self.te_parallel is not None and self.te_parallel not in TE_PARALLEL_RANGE:
            raise UsageError(f"--te-parallel: {self.te_parallel} is outside 1..32 (AOE's TE_PARALLEL_COMPILER range)")
        if self.device is not None and self.device < 0:
            raise UsageError(f"--device: {self.device} is not a device id (0, 1, ...)")

    def command(self) -> list[str]:
        return script_command(self.script, self.python, self.arguments)

    def check_script(self) -> None:
        check_script(self.script, self.python)

    def device_id(self, base: Mapping[str, str]) -> int:
        return device_id(self.device, base)

    def environment_changes(self, base: Mapping[str, str], work_dir: Path) -> dict[str, str]:
        """Every variable the script gets that differs from aoe-runner's own environment."""
        wanted = {
            "AOE_MODE": self.mode.aoe_mode,
            "ASCEND_WORK_PATH": str(work_dir),
            "PYTHONUNBUFFERED": "1",  # output arrives as it is printed, not at exit
        }
        if self.bank is not None:
            wanted["TUNE_BANK_PATH"] = str(self.bank.resolve())
        if self.te_parallel is not None:
            wanted["TE_PARALLEL_COMPILER"] = str(self.te_parallel)
        if self.repeat_tune:
            wanted["REPEAT_TUNE"] = "True"
        if self.device is not None:
            wanted["ASCEND_DEVICE_ID"] = str(self.device)
        return {name: value for name, value in wanted.items() if base.get(name) != value}


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
    """--device, else the inherited ASCEND_DEVICE_ID, else 0: the device whose lock a run takes."""
    if explicit is not None:
        return explicit
    inherited = base.get("ASCEND_DEVICE_ID", "0").strip()
    if not inherited.isdigit():
        raise UsageError(f"ASCEND_DEVICE_ID={inherited!r} is not a device id; pass --device")
    return int(inherited)
