"""The report facts of a plain training file, read from its typed structs without the normaliser or pydantic.

Most result files are plain: current-format reports whose values the normaliser takes as they are and warns about
nothing. For such a file this gives what `parsed.from_result_file(normalize(...))` gives (the same `ReportFacts`,
no warnings) for about a millisecond and no pydantic import; for any other file it gives None, and the normaliser
decides. It never reads a value differently: each value goes through the normaliser's own helpers (`figures`,
`keys`, `text`), and a test compares both ways on every fixture and on random documents.
"""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace
from typing import Any

from msgspec import UNSET

from aoe_runner.results.figures import count, improvement_disagreement, measured, number, repo_summary_mismatches
from aoe_runner.results.keys import REPO_SUMMARY_KEYS, file_timestamp, parse_report_key, status_of
from aoe_runner.results.report_facts import ReportFacts, first_moment, time_key
from aoe_runner.results.text import short_text
from aoe_runner.results.typed import TypedDocument


class NotPlain(Exception):
    """Something in the file the normaliser warns about, fixes up or ignores: leave the file to it."""


def plain_report_facts(document: TypedDocument, file_name: str, modified: datetime | None) -> list[ReportFacts] | None:
    """Each report's facts, in the file's order; None unless every top-level entry is a plain report (OPAT and basic
    sections only, no SGAT, nothing the normaliser would warn about)."""
    if not document:
        return None
    file_time = file_timestamp(file_name)
    try:
        return [_facts(key, index, parts, file_time, modified) for index, (key, parts) in enumerate(document.items())]
    except NotPlain:
        return None


def _facts(key: str, index: int, parts: list[Any], file_time: datetime | None, modified: datetime | None) -> ReportFacts:
    basic: Any = UNSET
    opat: Any = UNSET
    for part in parts:  # a section given twice: the normaliser says it reads only the last
        if part.SGAT is not UNSET or (part.basic is not UNSET and basic is not UNSET):
            raise NotPlain
        if part.OPAT is not UNSET and opat is not UNSET:
            raise NotPlain
        if part.basic is not UNSET:
            basic = part.basic
        if part.OPAT is not UNSET:
            opat = part.OPAT
    if basic is UNSET and opat is UNSET:
        raise NotPlain  # not a report: the normaliser ignores the entry, with a warning
    timestamp, source = first_moment(parse_report_key(key)[0], file_time, modified)
    basic_section = basic if isinstance(basic, dict) else {}  # any other value is no basic section to the normaliser
    name = basic_section.get("tuning_name")
    has_opat = opat is not UNSET and opat is not None
    status, failed, repo, model = _opat(opat) if has_opat else (None, [], None, None)
    return ReportFacts(
        key=key,
        index=index,
        timestamp=time_key(timestamp),
        timestamp_source=source,
        tuning_time=number(basic_section.get("tuning_time(s)")),
        counts_tuning_time=True,
        tuning_name=None if name is None else short_text(name),
        opat=has_opat,
        status=status,
        failed_operators=failed,
        opat_repo=repo,
        opat_model=model,
        sgat=False,
        sgat_repo=None,
        sgat_model=None,
    )


def _opat(opat: Any) -> tuple[str | None, list[str], list[int | None] | None, tuple[float, float] | None]:
    """An OPAT section's status, failed operators, repo counts and model times, as normalize._opat reads them."""
    status_raw = _given(opat.tuning_result, _given(opat.tune_result, None))
    status = status_of(status_raw)
    if status_raw is not None and status is None:
        raise NotPlain  # an unknown tuning result: a warning
    failed = _given(opat.tuning_failed, _given(opat.tune_failed, None)) or []
    return status, [short_text(name) for name in failed] if isinstance(failed, list) else [], _repo(opat), _model(opat)


def _repo(opat: Any) -> list[int | None] | None:
    summary = _given(opat.repo_summary, None)
    if not isinstance(summary, dict):
        return None
    counts = {field: count(summary.get(key)) for key, field in REPO_SUMMARY_KEYS.items()}
    if repo_summary_mismatches(SimpleNamespace(**counts)):
        raise NotPlain  # counts that do not add up: a warning
    return list(counts.values())


def _model(opat: Any) -> tuple[float, float] | None:
    before, after = number(_given(opat.baseline, None)), number(_given(opat.result, None))
    if before is None or after is None:
        return None
    if not measured(before, after) or improvement_disagreement(_given(opat.improvement, None), before, after):
        raise NotPlain  # left out, or a disagreeing figure: a warning
    return before, after


def _given(value: Any, absent: Any) -> Any:
    """A section's value as dict.get(key, absent) reads it: `absent` only when the key is missing."""
    return absent if value is UNSET else value
