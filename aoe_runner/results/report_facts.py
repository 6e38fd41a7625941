"""What one report adds to a bank summary besides its records: a msgspec struct, cached with its parsed file.

Kept out of parsed.py so that module can be compiled with mypyc (msgspec reads these annotations at run time).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal, Union

import msgspec

if TYPE_CHECKING:
    from aoe_runner.results.model import Report, ResultFile

_MICROSECOND = timedelta(microseconds=1)
REPO_FIELDS = ("add", "hit", "reserved", "unsatisfied", "update", "total")

TimeKey = int  # microseconds since datetime.min: an exact, cheaply compared and stored timestamp


TimestampSource = Literal["report key", "file name", "file mtime", "none"]


def timestamp_of(result_file: ResultFile, report: Report) -> tuple[datetime | None, TimestampSource]:
    """When a report was written, and how that is known: its key, else the file's name, else the file's mtime."""
    return first_moment(report.timestamp, result_file.file_timestamp, result_file.modified)


def first_moment(
    from_key: datetime | None, from_name: datetime | None, modified: datetime | None
) -> tuple[datetime | None, TimestampSource]:
    """timestamp_of from the three moments themselves (the plain-file fast path has no model to hand it)."""
    if from_key:
        return from_key, "report key"
    if from_name:
        return from_name, "file name"
    if modified:
        return modified, "file mtime"
    return None, "none"


def moment_of_mtime(timestamp: float) -> datetime | None:
    """A file time as a local datetime; None for one that datetime cannot hold (touch -d can set any)."""
    try:
        return datetime.fromtimestamp(timestamp)
    except (OverflowError, ValueError, OSError):
        return None


def time_key(moment: datetime | None) -> TimeKey | None:
    return None if moment is None else (moment - datetime.min) // _MICROSECOND


def moment_of(key: TimeKey | None) -> datetime | None:
    return None if key is None else datetime.min + timedelta(microseconds=key)


class ReportFacts(msgspec.Struct, array_like=True, gc=False):
    """Everything of one report but its records: its place in the order, and what adds to the totals."""

    key: Union[str, None]  # noqa: UP007 (msgspec evaluates annotations at run time)
    index: int
    timestamp: Union[TimeKey, None]  # noqa: UP007
    timestamp_source: str
    tuning_time: Union[float, None]  # noqa: UP007
    counts_tuning_time: bool  # False only for a legacy report, which has no tuning time to miss
    tuning_name: Union[str, None]  # noqa: UP007
    opat: bool
    status: Union[str, None]  # noqa: UP007
    failed_operators: list[str]
    opat_repo: Union[list[Union[int, None]], None]  # noqa: UP007
    opat_model: Union[tuple[float, float], None]  # noqa: UP007
    sgat: bool
    sgat_repo: Union[list[Union[int, None]], None]  # noqa: UP007
    sgat_model: Union[tuple[float, float], None]  # noqa: UP007
