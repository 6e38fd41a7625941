"""mindspore.device_context.ascend.op_tuning, which MindSpore has from 2.5."""

from __future__ import annotations

import mindspore
from tests.fakes.calls import note

if tuple(int(part) for part in mindspore.__version__.split(".")[:2]) < (2, 5):
    raise ImportError("No module named 'mindspore.device_context.ascend.op_tuning'")


def aoe_tune_mode(tune_mode: str) -> None:
    note("mindspore", "aoe_tune_mode", value=tune_mode)
    if tune_mode not in ("online", "offline"):
        raise ValueError("the argument 'tune_mode' must be in ['online', 'offline']")
    mindspore.aoe["tune_mode"] = tune_mode


def aoe_job_type(config: str) -> None:
    note("mindspore", "aoe_job_type", value=config)
    if config not in ("1", "2"):
        raise ValueError("the argument 'config' must be in ['1', '2']")
    mindspore.aoe["job_type"] = config
