"""Whether a row of runs.db is one that indexing a manifest wrote: the index is derived data, and a row edited by
hand, or left behind by a run directory deleted by hand, must never be shown as a run."""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path

from aoe_runner.runs.status import RunStatus

RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]+")  # create_run_directory's `YYYYmmdd-HHMMSS-<hex>`, nothing else
_STATUSES = frozenset(status.value for status in RunStatus)
_TEXT_COLUMNS = ("kind", "mode", "script", "script_name")
_OPTIONAL_TEXT_COLUMNS = ("cann_version", "soc", "bank_before", "bank_after", "host")


def damage(fields: dict[str, object], runs_dir: Path | None) -> str | None:
    """What is wrong with a row (its columns by name), or None for a row a manifest in runs_dir wrote."""
    run_id = fields["id"]
    if not isinstance(run_id, str) or RUN_ID.fullmatch(run_id) is None:
        return f"id {run_id!r} is not a run id"
    if fields["status"] not in _STATUSES:
        return f"run {run_id}: status {fields['status']!r} is not one of {', '.join(sorted(_STATUSES))}"
    for column in ("started_at", "ended_at"):
        value = fields[column]
        if value is None and column == "ended_at":
            continue
        if not isinstance(value, str) or not _is_time(value):
            return f"run {run_id}: {column} {value!r} is not a time"
    for column in _TEXT_COLUMNS:
        if not isinstance(fields[column], str):
            return f"run {run_id}: {column} {fields[column]!r} is not text"
    for column in _OPTIONAL_TEXT_COLUMNS:
        if fields[column] is not None and not isinstance(fields[column], str):
            return f"run {run_id}: {column} {fields[column]!r} is not text"
    if not isinstance(fields["device"], int | float | str) or not isinstance(fields["result_files"], int):  # a huge device: REAL
        return f"run {run_id}: device or result count is not a number"
    if fields["exit_code"] is not None and not isinstance(fields["exit_code"], int):
        return f"run {run_id}: exit code {fields['exit_code']!r} is not a number"
    if runs_dir is not None and not os.path.isfile(runs_dir / run_id / "manifest.json"):
        return f"run {run_id} has no manifest in {runs_dir} (its directory was removed)"
    return None


def _is_time(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True
