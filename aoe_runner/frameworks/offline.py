"""The offline `aoe` CLI (AOE.md §6): where it is installed, the command lines of its two uses, and what it leaves.

It tunes a model file (`aoe --model=M --job_type=1|2`, the inference engineers' use) and a PyTorch graph dump
(`aoe --job_type=2 --model_path=DIR`, the second phase of PyTorch tuning). Its workspace, `aoe_workspace/` in its
working directory, holds the tuned models at `aoe_workspace/<model>_<timestamp>/tunespace/result/*_tune.om`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from aoe_runner.common.modes import TuneMode
from aoe_runner.errors import InputError, UsageError

WORKSPACE = "aoe_workspace"
# where installs put the CLI, under a toolkit directory (the CANN docs name no single place: these are the layouts of
# ascend-toolkit up to 8.3 and cann from 8.5; PATH, which set_env.sh extends, is searched last)
CLI_UNDER_TOOLKIT = ("bin/aoe", "tools/aoe/bin/aoe", "*-linux/bin/aoe")
TOOLKITS_UNDER_ROOT = ("ascend-toolkit/latest", "cann")


class ModelFramework(str, Enum):
    """`aoe --framework=N`: the model file's framework."""

    CAFFE = "caffe"
    MINDSPORE = "mindspore"
    TF = "tf"
    ONNX = "onnx"

    @property
    def number(self) -> int:
        return _NUMBERS[self]

    @classmethod
    def parse(cls, text: str) -> ModelFramework:
        name = text.strip().lower()
        for framework in cls:
            if name in (framework.value, str(framework.number)):
                return framework
        raise UsageError(f"--model-framework: {text!r} is not one of caffe (0), mindspore (1), tf (3), onnx (5)")


_NUMBERS = {ModelFramework.CAFFE: 0, ModelFramework.MINDSPORE: 1, ModelFramework.TF: 3, ModelFramework.ONNX: 5}
_SUFFIXES = {
    ".prototxt": ModelFramework.CAFFE,
    ".air": ModelFramework.MINDSPORE,
    ".pb": ModelFramework.TF,
    ".onnx": ModelFramework.ONNX,
}


@dataclass(frozen=True)
class OfflineModel:
    """A model file to tune, as `tune --model` names it."""

    path: Path  # absolute
    framework: ModelFramework | None  # None: a graph dumped by aclGenGraphAndDumpForOp, which AOE reads as it is
    framework_source: str  # --model-framework, or the suffix it was inferred from
    given: bool  # --model-framework was given: it is passed on as --framework
    weight: Path | None = None

    def describe(self) -> str:
        if self.framework is None:
            return (
                f"model {self.path.name}: no known suffix, so a graph dumped by aclGenGraphAndDumpForOp ({self.framework_source})"
            )
        return f"model {self.path.name}: {self.framework.value} (--framework={self.framework.number}, {self.framework_source})"


def offline_model(model: Path, framework: str | None, weight: Path | None) -> OfflineModel:
    """The model as the CLI will read it; InputError (exit 4) for a file that is not there, UsageError for flags that
    do not fit it (a Caffe model needs its weight file, and only a Caffe model takes one)."""
    if not model.is_file():
        raise InputError(str(model), "no such model file")
    chosen: ModelFramework | None
    if framework is not None:
        chosen, source, given = ModelFramework.parse(framework), "--model-framework", True
    else:
        chosen, given = _SUFFIXES.get(model.suffix.lower()), False
        source = (
            f"from its suffix {model.suffix}"
            if chosen
            else f"suffix {model.suffix or '(none)'} is none of {', '.join(_SUFFIXES)}"
        )
    if chosen is ModelFramework.CAFFE and weight is None:
        raise UsageError(f"{model}: a Caffe model needs its weights: pass --weight FILE.caffemodel")
    if weight is not None:
        if chosen is not ModelFramework.CAFFE:
            raise UsageError("--weight: only a Caffe model (.prototxt) takes a weight file")
        if not weight.is_file():
            raise InputError(str(weight), "no such weight file")
    return OfflineModel(model.resolve(), chosen, source, given, weight.resolve() if weight is not None else None)


def model_command(cli: str, model: OfflineModel, mode: TuneMode, tune_ops: Path | None, reload: bool) -> list[str]:
    """The documented command line for tuning a model file."""
    command = [cli]
    if model.given and model.framework is not None:
        command.append(f"--framework={model.framework.number}")
    command += [f"--model={model.path}", f"--job_type={mode.aoe_mode}"]
    if model.weight is not None:
        command.append(f"--weight={model.weight}")
    if tune_ops is not None:
        command.append(f"--tune_ops_file={tune_ops}")
    if reload:
        command.append("--reload")
    return command


def dump_command(cli: str, dump: Path, tune_ops: Path | None) -> list[str]:
    """The documented command line for tuning a PyTorch graph dump (operator tuning only)."""
    command = [cli, "--job_type=2", f"--model_path={dump}"]
    if tune_ops is not None:
        command.append(f"--tune_ops_file={tune_ops}")
    return command


def find_cli(explicit: Path | None, env: Mapping[str, str], home: Path) -> str:
    """The `aoe` executable: --aoe, else the toolkit the environment names, the install roots, then PATH; InputError
    (exit 4) naming every place looked at when there is none."""
    if explicit is not None:
        if not (explicit.is_file() and os.access(explicit, os.X_OK)):
            raise InputError(str(explicit), "--aoe: not an executable file")
        return str(explicit.resolve())
    places = toolkits(env, home)
    for toolkit in places:
        for relative in CLI_UNDER_TOOLKIT:
            for candidate in sorted(toolkit.glob(relative)):
                if candidate.is_file() and os.access(candidate, os.X_OK):
                    return str(candidate)
    on_path = shutil.which("aoe", path=env.get("PATH", os.defpath))
    if on_path is not None:
        return on_path
    looked = ", ".join(map(str, places))
    raise InputError(
        "aoe",
        f"the offline AOE CLI was not found (under {looked}: {', '.join(CLI_UNDER_TOOLKIT)}; nor on PATH): it comes "
        "with the CANN toolkit; source its set_env.sh or pass --aoe PATH",
    )


def toolkits(env: Mapping[str, str], home: Path) -> list[Path]:
    """Where a CANN toolkit may be: the one the environment names, then the usual install roots."""
    named = [Path(env[name]) for name in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH") if env.get(name)]
    roots = [Path("/usr/local/Ascend"), home / "Ascend"]
    return list(dict.fromkeys([*named, *(root / under for root in roots for under in TOOLKITS_UNDER_ROOT)]))


def tuned_models(work_dir: Path) -> list[tuple[str, Path]]:
    """(workspace entry, tuned model) for each `*_tune.om` the CLI left, in name order. The walk follows no
    symbolic link: an entry, `tunespace/`, `result/` or a model that is a link is passed over, so nothing outside
    the workspace is ever taken for one of its models."""
    found = []
    for entry in _real_directories(work_dir / WORKSPACE):
        result = entry / "tunespace" / "result"
        if not (_real_directory(entry / "tunespace") and _real_directory(result)):
            continue
        for model in sorted(result.glob("*_tune.om")):
            if model.is_file() and not model.is_symlink():
                found.append((entry.name, model))
    return found


def _real_directories(directory: Path) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(directory) if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _real_directory(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()
