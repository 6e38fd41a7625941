"""The training frameworks and tuning scenarios aoe-runner tells apart (AOE.md §1, §2, §6)."""

from __future__ import annotations

from enum import Enum

from aoe_runner.errors import UsageError


class Framework(str, Enum):
    """How AOE is switched on in a training script."""

    TF = "tf"  # TFAdapter reads AOE_MODE from the environment
    MINDSPORE = "mindspore"  # its own switch, called in the script's process before the script runs
    PYTORCH = "pytorch"  # no online tuning: a graph dump, then the offline `aoe` CLI

    @classmethod
    def parse(cls, text: str) -> Framework | None:
        """`--framework`: one of the frameworks, or None for `auto`."""
        name = text.strip().lower()
        if name == "auto":
            return None
        found = _ALIASES.get(name)
        if found is None:
            raise UsageError(f"--framework: {text!r} is not one of tf, mindspore, pytorch, auto")
        return found


_ALIASES = {
    "tf": Framework.TF,
    "tensorflow": Framework.TF,
    "mindspore": Framework.MINDSPORE,
    "ms": Framework.MINDSPORE,
    "pytorch": Framework.PYTORCH,
    "torch": Framework.PYTORCH,
    "torch_npu": Framework.PYTORCH,
}


class Scenario(str, Enum):
    """Which of AOE's documented resource formulas applies (AOE.md §2, §6)."""

    TRAINING = "training"  # AOE inside the training process (TensorFlow, MindSpore)
    PYTORCH = "pytorch"  # a PyTorch graph dump tuned by the offline CLI with --model_path
    OFFLINE = "offline"  # the offline CLI tuning a model file

    @classmethod
    def of(cls, framework: Framework | None, model: bool) -> Scenario:
        if model:
            return cls.OFFLINE
        return cls.PYTORCH if framework is Framework.PYTORCH else cls.TRAINING
