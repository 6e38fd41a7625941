"""What a tuning run intends to do: the inputs of every preflight check besides the host facts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aoe_runner.common.modes import TuneMode
from aoe_runner.common.plain_data import FIELD_DOCSTRINGS
from aoe_runner.common.quantities import parse_size
from aoe_runner.errors import UsageError
from aoe_runner.frameworks.kinds import Framework, Scenario

__all__ = ["Plan", "TuneMode", "plan_for"]


def _procs_at_least_one(schema: dict[str, Any]) -> None:
    schema["properties"]["procs"]["minimum"] = 1  # plan_for refuses fewer


@dataclass(kw_only=True)
class Plan:
    __pydantic_config__ = {**FIELD_DOCSTRINGS, "json_schema_extra": _procs_at_least_one}

    mode: TuneMode
    mode_source: str
    """Where the mode came from: --mode, AOE_MODE or the default."""
    procs: int = 1
    """Training processes (P in the CPU formulas)."""
    model_memory_bytes: int | None = None
    """Memory one training process needs, when known."""
    scenario: Scenario = Scenario.TRAINING
    """Which documented formulas apply: training (AOE in the training process), pytorch (a graph dump tuned by the
    offline CLI) or offline (a model file tuned by the offline CLI)."""
    framework: Framework | None = None
    """The training script's framework, when known (MindSpore alone needs lspci)."""
    model_file_bytes: int | None = None
    """The size of the model file the offline CLI tunes (its workspace takes up to 20 times that)."""


def plan_for(
    mode: str | None,
    procs: int = 1,
    model_memory: str | None = None,
    env: Mapping[str, str] | None = None,
    framework: Framework | None = None,
    model_file_bytes: int | None = None,
) -> Plan:
    """Build a plan from command-line values; the mode defaults to AOE_MODE when it names one, else op. A model file
    (its size given) is the offline scenario, a PyTorch script the pytorch one, anything else training."""
    if mode is not None:
        chosen, source = TuneMode.parse(mode), "--mode"
    elif env and (env.get("AOE_MODE") or "").strip() in ("1", "2"):
        chosen, source = TuneMode.parse(env["AOE_MODE"]), f"AOE_MODE={env['AOE_MODE'].strip()}"
    else:
        chosen, source = TuneMode.OP, "default: no --mode, AOE_MODE not 1 or 2"
    if procs < 1:
        raise UsageError(f"--procs: {procs} is not a positive number of processes")
    memory = parse_size(model_memory, "--model-memory") if model_memory is not None else None
    scenario = Scenario.of(framework, model_file_bytes is not None)
    if scenario is Scenario.PYTORCH and chosen is TuneMode.SUBGRAPH:
        raise UsageError("--mode subgraph: PyTorch has operator tuning only (the offline CLI's --job_type=2)")
    return Plan(
        mode=chosen,
        mode_source=source,
        procs=procs,
        model_memory_bytes=memory,
        scenario=scenario,
        framework=framework,
        model_file_bytes=model_file_bytes,
    )
