"""What a run record says about how AOE was switched on: the framework, the switch called, each supervised phase,
and for a model file the offline CLI's tuned models and workspace."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated

from annotated_types import Ge, Le

from aoe_runner.common.plain_data import FIELD_DOCSTRINGS

Count = Annotated[int, Ge(0), Le(2**63 - 1)]  # a size or a count, as a file system and SQLite can hold it


@dataclass(kw_only=True)
class SwitchRecord:
    """The framework call the launcher made in the script's process before the script ran."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    framework: str
    version: str | None = None
    """The framework's own version, as the launcher imported it."""
    calls: list[str] = field(default_factory=list)
    """Each call, as Python source."""
    python: str | None = None
    """The interpreter the launcher ran in."""
    error: str | None = None
    """Why the switch could not be thrown (the script was then not run)."""


@dataclass(kw_only=True)
class PhaseRecord:
    """One supervised process of a run: the script, or the offline CLI after a PyTorch dump."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    name: str
    """script, dump (a PyTorch script dumping its graphs) or aoe (the offline CLI)."""
    command: list[str]
    working_directory: str | None = None
    """Where it ran; None: the run's working directory."""
    started_at: datetime | None = None
    """None: the phase never started (an earlier one failed or was stopped)."""
    ended_at: datetime | None = None
    exit_code: int | None = None
    """The process's own exit code, when it exited."""
    signal: str | None = None
    """The signal that ended it, when one did."""
    skipped: str | None = None
    """Why it did not run."""


@dataclass(kw_only=True)
class OfflineRecord:
    """A model file tuned by the offline CLI: what it was given and what it left."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    model: str
    model_framework: str | None = None
    """caffe, mindspore, tf or onnx; None for a dumped graph, which the CLI reads as it is."""
    weight: str | None = None
    reload_of: str | None = None
    """The run whose interrupted subgraph tuning this one resumed (--reload)."""
    tuned_models: list[str] = field(default_factory=list)
    """The tuned .om files, relative to the run's directory."""
    workspace: str | None = None
    """The CLI's aoe_workspace directory."""
    workspace_bytes: Count = 0
    """What the workspace held when the CLI ended."""
    workspace_kept: bool = False
    """False: it was removed once its tuned models were kept."""


@dataclass(kw_only=True)
class CampaignLink:
    """The campaign job a run was started for (`campaign run` sets AOE_RUNNER_CAMPAIGN for the tune it starts)."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    campaign: str
    job: str
    attempt: str
    """The attempt's own token: one per start of the job (campaign status numbers them)."""
