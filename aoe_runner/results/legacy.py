"""Read a legacy Auto Tune result file (CANN 5.x and earlier) into the normalised model.

Before AOE, the Auto Tune tool wrote `tune_result_<YYYYMMDD>_<HHMMSSmmm>_pid<pid>.json`: one JSON object
keyed by operator name (`[Adam/mul_1]`, or `[['scope/a', 'scope/b']]` for a fused group), each value
`{"result_data": {"after_tune", "before_tune"}, "status_data": {"bank_append", "bank_hit", "bank_reserved",
"bank_update"}, "ticks_best": [...]}`; some entries hold only status_data. The whole file is one tuning
task, so it becomes one report. Its times have no stated unit: they stay in their own section, never µs.
The bank flags map onto AOE's counts: bank_append is add, bank_update update, bank_hit hit, bank_reserved
reserved; an entry with no flag set is unsatisfied. Entries that were added or updated and have usable
times are the operators the file put in the bank.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Final

from aoe_runner.results.figures import NOT_MEASURED, measured, number
from aoe_runner.results.keys import timestamp_of
from aoe_runner.results.model import LegacyOperator, LegacySection, Report, RepoSummary, ResultFile, UpdateMode
from aoe_runner.results.raw import RawDocument
from aoe_runner.results.tally import Tally
from aoe_runner.results.text import short_repr, shortened

_LABEL = "legacy Auto Tune file"  # how its warnings begin

LAYOUT: Final = "legacy_auto_tune"
ENTRY_KEYS = ("result_data", "status_data", "ticks_best")
_FILE_NAME = re.compile(r"^tune_result_(\d{8})_(\d{6})(\d{1,3})?_pid(\d+)\.json$")
_FLAGS = {"bank_append": "add", "bank_hit": "hit", "bank_reserved": "reserved", "bank_update": "update"}
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")


def is_legacy(raw: RawDocument, file_name: str) -> bool:
    """An object whose entries hold Auto Tune's keys; with no entry to tell, a file named as Auto Tune names them."""
    if raw.layout != "training":
        return False
    if not raw.entries:
        return _FILE_NAME.match(file_name) is not None
    return any(isinstance(value, dict) and any(key in value for key in ENTRY_KEYS) for _, value in raw.entries)


def normalize_legacy(raw: RawDocument, path: str, file_name: str) -> ResultFile:
    warnings = list(raw.notes)
    reader = _EntryReader()
    for key, value in raw.entries:
        reader.read(key or "", value)
    reader.warn(warnings)
    if raw.partial:
        cut = f"; {raw.cut_off_report} was cut off mid-write" if raw.cut_off_report else ""
        warnings.append(
            f"partial file (still being written, or its writer crashed): {reader.entries} complete entries recovered{cut}"
        )
    reports = [Report(key=None, index=0, legacy=reader.section())] if reader.entries else []
    return ResultFile(
        path=path,
        layout=LAYOUT,
        partial=raw.partial,
        file_timestamp=file_timestamp(file_name),
        reports=reports,
        warnings=warnings,
    )


def file_timestamp(file_name: str) -> datetime | None:
    """The moment in `tune_result_<YYYYMMDD>_<HHMMSSmmm>_pid<pid>.json`, as local time."""
    match = _FILE_NAME.match(file_name)
    if not match:
        return None
    return timestamp_of(*match.group(1, 2, 3))


def members_of(key: str) -> tuple[str, ...]:
    """The operator names in a key: `[Adam/mul_1]` holds one, `[['scope/a', 'scope/b']]` a fused group."""
    inner = key.strip()
    for _ in range(2):  # the outer brackets, then a group's list brackets
        if len(inner) >= 2 and inner[0] == "[" and inner[-1] == "]":
            inner = inner[1:-1].strip()
    if inner[:1] in ("'", '"'):
        quoted = [single or double for single, double in _QUOTED.findall(inner)]
        if quoted:
            return tuple(quoted)
    return (inner or key,)


def display_name(members: tuple[str, ...]) -> str:
    return " + ".join(members)


class _EntryReader:
    """Counts the bank flags of every entry and keeps the operators that were added or updated with usable times."""

    def __init__(self) -> None:
        self.entries = 0
        self.counts = dict.fromkeys(("add", "hit", "reserved", "update", "unsatisfied"), 0)
        self.status_only = 0
        self.operators: list[LegacyOperator] = []
        self.skipped = Tally("entries skipped (not an object)")
        self.odd_flags = Tally("entries have a bank flag that is neither true nor false (read as false)")
        self.without_times = Tally("added or updated entries have no usable result_data times (counted, not listed)")
        self.not_positive = Tally(f"added or updated entries skipped ({NOT_MEASURED})")

    def read(self, key: str, value: Any) -> None:
        if not isinstance(value, dict):
            self.skipped.add(f"{shortened(key)}: {short_repr(value)}")
            return
        self.entries += 1
        flags = self._flags(key, value.get("status_data"))
        for flag in flags:
            self.counts[flag] += 1
        if not flags:
            self.counts["unsatisfied"] += 1
        if "result_data" not in value:
            self.status_only += 1
        if "add" in flags or "update" in flags:
            self._operator(key, value.get("result_data"), UpdateMode.ADD if "add" in flags else UpdateMode.UPDATE)

    def _flags(self, key: str, status: Any) -> set[str]:
        if not isinstance(status, dict):
            return set()
        flags = {flag for name, flag in _FLAGS.items() if status.get(name) is True}
        odd = [name for name in _FLAGS if not _boolean_or_absent(status.get(name))]
        if odd:
            self.odd_flags.add(f"{shortened(key)}: {odd[0]} {short_repr(status[odd[0]])}")
        return flags

    def _operator(self, key: str, result: Any, update_mode: UpdateMode) -> None:
        before = number(result.get("before_tune")) if isinstance(result, dict) else None
        after = number(result.get("after_tune")) if isinstance(result, dict) else None
        if before is None or after is None:
            self.without_times.add(shortened(key))
        elif not measured(before, after):
            self.not_positive.add(f"{shortened(key)}: before {before:g}, after {after:g}")
        else:
            self.operators.append(LegacyOperator(key, members_of(key), before, after, update_mode))

    def section(self) -> LegacySection:
        summary = RepoSummary(**self.counts, total=self.entries)
        return LegacySection(operators=self.operators, repo_summary=summary, status_only=self.status_only)

    def warn(self, warnings: list[str]) -> None:
        changed = self.counts["add"] + self.counts["update"]
        self.skipped.flush(_LABEL, self.entries + self.skipped.count, warnings)
        self.odd_flags.flush(_LABEL, self.entries, warnings)
        self.without_times.flush(_LABEL, changed, warnings)
        self.not_positive.flush(_LABEL, changed, warnings)


def _boolean_or_absent(value: object) -> bool:
    return value is True or value is False or value is None  # by identity: 1 and 0 are not flags
