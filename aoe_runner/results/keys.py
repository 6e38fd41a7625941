"""What a report's key and a result file's name say (when it was written, by which thread), a tuning result's status
and a repo summary's keys: read the same way by the normaliser and by the plain-file fast path (`plain_reports.py`),
without pydantic."""

from __future__ import annotations

import re
from datetime import datetime

from aoe_runner.results.text import short_text

_TIMESTAMP = r"(\d{8})_?(\d{6})(\d{1,3})?"
_REPORT_KEY = re.compile(rf"^report_{_TIMESTAMP}_(\d+)$")
_THREAD_ID_DIGITS = 20  # a longer "thread id" is no thread id (and int() refuses over 4,300 digits)
_FILE_NAME = re.compile(rf"^aoe_result_[A-Za-z]+_{_TIMESTAMP}_(\d+)\.json$")

# a repo_summary's keys, and the names of its counts (report_facts.REPO_FIELDS, in that order)
REPO_SUMMARY_KEYS = {
    "repo_add_num": "add",
    "repo_hit_num": "hit",
    "repo_reserved_num": "reserved",
    "repo_unsatisfied_num": "unsatisfied",
    "repo_update_num": "update",
    "total_num": "total",
}
SUCCESSFUL, FAILED, INCOMPLETE = "successful", "failed", "incomplete"  # model.TuningStatus's values


def parse_report_key(key: str | None) -> tuple[datetime | None, int | None]:
    """`report_YYYYMMDDhhmmss[ms]_<thread id>`: its moment and thread id; (None, None) for any other key."""
    match = _REPORT_KEY.match(key) if key else None
    if not match:
        return None, None
    thread_id = match.group(4)
    return timestamp_of(*match.group(1, 2, 3)), int(thread_id) if len(thread_id) <= _THREAD_ID_DIGITS else None


def file_timestamp(file_name: str) -> datetime | None:
    """The moment in an `aoe_result_<kind>_<timestamp>_<pid>.json` name; None for any other name."""
    match = _FILE_NAME.match(file_name)
    return timestamp_of(*match.group(1, 2, 3)) if match else None


def timestamp_of(date: str, time: str, millis: str | None) -> datetime | None:
    """`YYYYMMDD`, `hhmmss` and optional milliseconds (1–3 digits, read as a whole number of ms)."""
    moment = moment_of_digits(date + time)
    return moment.replace(microsecond=int(millis) * 1000) if moment is not None and millis else moment


def moment_of_digits(digits: str) -> datetime | None:
    """The moment of 14 ASCII digits as `datetime.strptime(digits, "%Y%m%d%H%M%S")` reads them (each field two
    digits, the year four, in its range), None where it raises; None too for other digits, some of which strptime
    took in some fields. Without strptime, whose module, with calendar behind it, a report
    would otherwise load."""
    if len(digits) != 14 or not (digits.isascii() and digits.isdigit()):
        return None
    try:
        return datetime(
            int(digits[:4]), int(digits[4:6]), int(digits[6:8]), int(digits[8:10]), int(digits[10:12]), int(digits[12:])
        )
    except ValueError:
        return None


def status_of(raw: object) -> str | None:
    """A tuning result's status (SUCCESSFUL, FAILED, INCOMPLETE) from AOE's words for it; None when it says none."""
    text = short_text(raw).lower() if raw is not None else ""
    if "success" in text:
        return SUCCESSFUL
    if "fail" in text:
        return FAILED
    if "incomplete" in text:
        return INCOMPLETE
    return None
