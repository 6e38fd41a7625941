"""A run's status and the name of its record: what the run index and `runs list` need without the manifest models
(pydantic and the host-facts schema are slow to load)."""

from __future__ import annotations

from enum import Enum

MANIFEST_NAME = "manifest.json"


class RunStatus(str, Enum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    TIMED_OUT = "timed_out"
    ABANDONED = "abandoned"  # the supervisor died before it could record the end

    @property
    def ended(self) -> bool:
        return self is not RunStatus.RUNNING
