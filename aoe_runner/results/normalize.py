"""Turn the decoded top-level entries of a result file into the normalised model, variant by variant.

Variants (AOE.md §4): training files (an object of `report_*` lists of single-key sections), the
offline CLI's top-level list, CANN 6.0 keys (`opat_tune_result`, add/update operator lists with flat
performance fields), op types as a string or a list, integer or float times. Nothing here rejects a
file for a bad record: it skips the record and says so in one aggregated warning. A record with a
time that is zero, negative or outside figures.SHORTEST_TIME..LONGEST_TIME is no measurement: it is skipped too
(and so left out of every saving).
Values of an unexpected type become bounded text (`short_text`), however deep or long they are.
Legacy Auto Tune files (an object of operator entries, no report in it) are read by `legacy.py`.
"""

from __future__ import annotations

from typing import Any

from aoe_runner.errors import InputError
from aoe_runner.results.figures import (
    NOT_MEASURED,
    count,
    improvement_disagreement,
    measured,
    number,
    repo_summary_mismatches,
    speedup_figure_matches,
    time_of,
)
from aoe_runner.results.keys import REPO_SUMMARY_KEYS, file_timestamp, parse_report_key, status_of
from aoe_runner.results.legacy import is_legacy, normalize_legacy
from aoe_runner.results.model import (
    BasicInfo,
    ModelTimes,
    OpatSection,
    OperatorChange,
    Report,
    RepoSummary,
    ResultFile,
    SgatSection,
    SubgraphChange,
    TuningStatus,
    UpdateMode,
)
from aoe_runner.results.raw import RawDocument
from aoe_runner.results.tally import Tally
from aoe_runner.results.text import short_repr, short_text, shortened
from aoe_runner.results.typed import TypedOperators

SECTION_NAMES = ("basic", "OPAT", "SGAT")
_UPDATE_MODES = {"add": UpdateMode.ADD, "update": UpdateMode.UPDATE}


class _RecordTallies:
    """The problems found in one section's operator or subgraph records."""

    def __init__(self, kind: str, identity: str) -> None:
        self.unusable = Tally(f"{kind} records skipped (no {identity} or no usable times)")
        self.not_positive = Tally(f"{kind} records skipped ({NOT_MEASURED})")
        self.disagreeing = Tally(f"{kind} improvement figures disagree with their times")

    def flush(self, label: str, kept: int, warnings: list[str]) -> None:
        total = kept + self.unusable.count + self.not_positive.count
        for tally in (self.unusable, self.not_positive, self.disagreeing):
            tally.flush(label, total, warnings)


def normalize(raw: RawDocument, path: str, file_name: str) -> ResultFile:
    warnings: list[str] = list(raw.notes)
    reports: list[Report] = []
    ignored: list[str] = []
    for index, (key, value) in enumerate(raw.entries):
        sections = _sections_of(value)
        if sections is None:
            ignored.append(repr(shortened(key)) if key is not None else "None")
            continue
        report = _report(key, index, sections, warnings)
        repeated = _repeated_sections(value)
        if repeated:
            warnings.append(
                f"{_label(key, index)}: sections given more than once ({', '.join(repeated)}); only the last of each is read"
            )
        reports.append(report)
    if not reports and is_legacy(raw, file_name):
        return normalize_legacy(raw, path, file_name)
    if ignored and not reports:
        raise InputError(path, "not an AOE result file: no entry holds basic/OPAT/SGAT sections")
    if ignored:
        warnings.append(f"ignored top-level entries that are not reports: {', '.join(ignored[:5])}")
    if raw.partial:
        cut = f"; {raw.cut_off_report} was cut off mid-write" if raw.cut_off_report else ""
        warnings.append(
            f"partial file (still being written, or its writer crashed): {len(reports)} complete report(s) recovered{cut}"
        )
    return ResultFile(
        path=path,
        layout=raw.layout,
        partial=raw.partial,
        file_timestamp=file_timestamp(file_name),
        reports=reports,
        warnings=warnings,
    )


def _sections_of(value: Any) -> dict[str, Any] | None:
    """Merge a report's list of single-key sections into one dict; None when it is not a report."""
    if isinstance(value, dict):
        parts = [value]
    elif isinstance(value, list) and all(isinstance(part, dict) for part in value):
        parts = value
    else:
        return None
    sections: dict[str, Any] = {}
    for part in parts:
        sections.update(part)
    if not any(name in sections for name in SECTION_NAMES):
        return None
    return sections


def _label(key: str | None, index: int) -> str:
    """A report as a warning names it: its key, shortened, and its place in the file."""
    return f"{shortened(key) if key else 'report'} (#{index + 1})"


def _repeated_sections(value: Any) -> list[str]:
    """The section names that more than one part of a report's list holds (a later part replaces an earlier)."""
    if not isinstance(value, list):
        return []
    seen: dict[str, int] = {}
    for part in value:
        for name in part:
            seen[name] = seen.get(name, 0) + 1
    return [f"{shortened(name)} {count} times" for name, count in seen.items() if count > 1]


def _report(key: str | None, index: int, sections: dict[str, Any], warnings: list[str]) -> Report:
    label = _label(key, index)
    timestamp, thread_id = parse_report_key(key)
    unknown = [name for name in sections if name not in SECTION_NAMES]
    if unknown:
        warnings.append(f"{label}: unknown section(s) ignored: {', '.join(shortened(name) for name in unknown[:5])}")
    basic = sections.get("basic")
    opat = sections.get("OPAT")
    sgat = sections.get("SGAT")
    return Report(
        key=key,
        index=index,
        timestamp=timestamp,
        thread_id=thread_id,
        basic=_basic(basic) if isinstance(basic, dict) else None,
        opat=_opat(opat, f"{label} OPAT", warnings) if isinstance(opat, dict) else None,
        sgat=_sgat(sgat, f"{label} SGAT", warnings) if isinstance(sgat, dict) else None,
    )


def _basic(section: dict[str, Any]) -> BasicInfo:
    name = section.get("tuning_name")
    return BasicInfo(
        tuning_name=None if name is None else short_text(name),
        tuning_time_s=number(section.get("tuning_time(s)")),
    )


def _opat(section: dict[str, Any], label: str, warnings: list[str]) -> OpatSection:
    status_raw = section.get("opat_tuning_result", section.get("opat_tune_result"))
    status_value = status_of(status_raw)
    status = None if status_value is None else TuningStatus(status_value)
    if status_raw is not None and status is None:
        warnings.append(f"{label}: unknown tuning result {short_repr(status_raw)}")
    failed = section.get("tuning_failed_operators", section.get("tune_failed_operators")) or []
    return OpatSection(
        status=status,
        status_raw=None if status_raw is None else short_text(status_raw),
        model_times=_model_times(section, label, warnings),
        operators=_operators(section.get("repo_modified_operators"), label, warnings),
        repo_summary=_repo_summary(section.get("repo_summary"), label, warnings),
        failed_operators=[short_text(name) for name in failed] if isinstance(failed, list) else [],
    )


def _sgat(section: dict[str, Any], label: str, warnings: list[str]) -> SgatSection:
    return SgatSection(
        model_times=_model_times(section, label, warnings),
        subgraphs=_subgraphs(section.get("repo_modified_subgraphs"), label, warnings),
        repo_summary=_repo_summary(section.get("repo_summary"), label, warnings),
    )


def _model_times(section: dict[str, Any], label: str, warnings: list[str]) -> ModelTimes | None:
    before = number(section.get("model_baseline_performance(ms)"))
    after = number(section.get("model_result_performance(ms)"))
    if before is None or after is None:
        return None
    if not measured(before, after):
        warnings.append(f"{label}: model times left out, {NOT_MEASURED} (before {before:g} ms, after {after:g} ms)")
        return None
    raw = section.get("model_performance_improvement")
    claimed = improvement_disagreement(raw, before, after)
    if claimed:
        warnings.append(f"{label}: model improvement {claimed}")
    return ModelTimes(before_ms=before, after_ms=after, improvement_raw=None if raw is None else short_text(raw))


def _operators(value: Any, label: str, warnings: list[str]) -> list[OperatorChange]:
    """Every shape: typed records from the fast decoder, a list of items with `tune_performance`,
    or CANN 6.0's add/update lists of flat items."""
    tallies = _RecordTallies("operator", "name")
    operators: list[OperatorChange] = []
    if isinstance(value, TypedOperators):
        _append_typed_operators(value, operators, tallies)
    else:
        batches = (
            [(value.get("add_repo_operators"), UpdateMode.ADD), (value.get("update_repo_operators"), UpdateMode.UPDATE)]
            if isinstance(value, dict)
            else [(value, None)]
        )
        for items, implied_mode in batches:
            for item in items if isinstance(items, list) else ():
                _append_operator(item, implied_mode, operators, tallies)
    tallies.flush(label, len(operators), warnings)
    return operators


def _append_typed_operators(records: TypedOperators, out: list[OperatorChange], tallies: _RecordTallies) -> None:
    """The hot loop of the fast path: records whose types decoding has already checked."""
    for record in records:
        name, op_type = record.op_name, record.op_type
        op_types = (op_type,) if type(op_type) is str else tuple(op_type or ())
        for mode, perf in record.tune_performance.items():
            _append_change(name, op_types, mode, perf.before, perf.after, perf.update_mode, None, perf.improvement, out, tallies)


def _append_operator(
    item: Any,
    implied_mode: UpdateMode | None,
    out: list[OperatorChange],
    tallies: _RecordTallies,
) -> None:
    """The hot loop of the generic path (once per operator record dict)."""
    name = item.get("op_name") if type(item) is dict else None
    if type(name) is not str:
        tallies.unusable.add(short_repr(item))
        return
    op_types = _op_types(item.get("op_type"))
    tuned = item.get("tune_performance")
    per_mode = tuned.items() if type(tuned) is dict else ((None, item),)
    for tuning_mode, perf in per_mode:
        if type(perf) is not dict:
            tallies.unusable.add(name)
            continue
        before = perf.get("performance_before_tune(us)")
        after = perf.get("performance_after_tune(us)")
        raw = perf.get("performance_improvement")
        update_mode = perf.get("update_mode")
        _append_change(name, op_types, tuning_mode, before, after, update_mode, implied_mode, raw, out, tallies)


def _op_types(op_type: Any) -> tuple[str, ...]:
    if type(op_type) is str:
        return (op_type,)
    if isinstance(op_type, list):
        return tuple(short_text(t) for t in op_type)
    return () if op_type is None else (short_text(op_type),)


def _append_change(
    name: str,
    op_types: tuple[str, ...],
    tuning_mode: str | None,
    before: Any,
    after: Any,
    update_mode: Any,
    implied_mode: UpdateMode | None,
    raw: Any,
    out: list[OperatorChange],
    tallies: _RecordTallies,
) -> None:
    """Append one operator change shared by both paths, or count it in tallies when its times are not usable."""
    if not (type(before) is float and type(after) is float and measured(before, after)):
        times = _positive_times(name, before, after, tallies)
        if times is None:
            return
        before, after = times
    mode = (_UPDATE_MODES.get(update_mode) if type(update_mode) is str else None) or implied_mode or UpdateMode.ADD
    if raw is not None and not speedup_figure_matches(raw, before, after):
        claimed = improvement_disagreement(raw, before, after)
        if claimed:
            tallies.disagreeing.add(f"{name}: {claimed}")
    improvement = raw if raw is None or type(raw) is str else short_text(raw)
    out.append(OperatorChange(name, op_types, tuning_mode, before, after, mode, improvement))


def _positive_times(name: str, before: object, after: object, tallies: _RecordTallies) -> tuple[float, float] | None:
    """Both times as floats, or None after counting the record as unusable or as not positive."""
    before_number, after_number = number(before), number(after)
    if before_number is None or after_number is None:
        tallies.unusable.add(name)
        return None
    if not measured(before_number, after_number):
        tallies.not_positive.add(f"{name}: before {before_number:g}, after {after_number:g}")
        return None
    return before_number, after_number


def _subgraphs(value: Any, label: str, warnings: list[str]) -> list[SubgraphChange]:
    if not isinstance(value, dict):
        return []
    tallies = _RecordTallies("subgraph", "repo_key")
    subgraphs: list[SubgraphChange] = []
    for list_name, update_mode in (("add_repo_subgraphs", UpdateMode.ADD), ("update_repo_subgraphs", UpdateMode.UPDATE)):
        items = value.get(list_name)
        for item in items if isinstance(items, list) else ():
            record = _subgraph(item, update_mode, tallies)
            if record:
                subgraphs.append(record)
    tallies.flush(label, len(subgraphs), warnings)
    return subgraphs


def _subgraph(item: Any, update_mode: UpdateMode, tallies: _RecordTallies) -> SubgraphChange | None:
    if not isinstance(item, dict):
        tallies.unusable.add(short_repr(item))
        return None
    key = None if item.get("repo_key") is None else short_text(item["repo_key"])
    before = time_of(item.get("performance_before_tune(ms)"))
    after = time_of(item.get("performance_after_tune(ms)"))
    if key is None or before is None or after is None:
        tallies.unusable.add(str(key))
        return None
    if not measured(before, after):
        tallies.not_positive.add(f"{key}: before {before:g}, after {after:g}")
        return None
    raw = item.get("performance_improvement")
    claimed = improvement_disagreement(raw, before, after)
    if claimed:
        tallies.disagreeing.add(f"{key}: {claimed}")
    return SubgraphChange(key, before, after, update_mode, None if raw is None else short_text(raw))


def _repo_summary(value: Any, label: str, warnings: list[str]) -> RepoSummary | None:
    if not isinstance(value, dict):
        return None
    counts = {field: count(value.get(key)) for key, field in REPO_SUMMARY_KEYS.items()}
    summary = RepoSummary(**counts)
    for problem in repo_summary_mismatches(summary):
        warnings.append(f"{label}: repo_summary does not add up: {problem}")
    return summary
