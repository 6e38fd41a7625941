"""A fake MindSpore: `__version__` from FAKE_MINDSPORE_VERSION (default 2.5.0); op_tuning exists from 2.5 on."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[4]))  # the repository, for tests.fakes.calls
from tests.fakes.calls import note, training_result  # noqa: E402

__version__ = os.environ.get("FAKE_MINDSPORE_VERSION", "2.5.0")
aoe = {"tune_mode": None, "job_type": "2"}  # what the switches set


def set_context(**options: object) -> None:
    note("mindspore", "set_context", options=options)
    if "aoe_tune_mode" in options:
        if options["aoe_tune_mode"] not in ("online", "offline"):
            raise ValueError("the argument 'aoe_tune_mode' must be in ['online', 'offline']")
        aoe["tune_mode"] = options["aoe_tune_mode"]
    config = options.get("aoe_config")
    if isinstance(config, dict):
        unknown = set(config) - {"job_type"}
        if unknown:
            raise ValueError(f"aoe_config: unknown keys {sorted(unknown)}")
        aoe["job_type"] = config.get("job_type", "2")


def run_model(name: str, operators: int = 2) -> None:
    """What a training step does here: with AOE switched on online, a result file, as MindSpore's own test expects."""
    print(f"training {name}", flush=True)
    if aoe["tune_mode"] == "online":
        print(f"[Aoe]{name} Tuning process finished.", flush=True)
        training_result([f"{name}/MatMul_{n}" for n in range(operators)], Path.cwd())
