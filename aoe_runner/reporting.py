"""The core of `aoe-runner report`: paths in, a bank summary or diff out, with every input problem kept."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from aoe_runner.diff import DEFAULT_THRESHOLD_PCT, BankDiff, diff_summaries
from aoe_runner.errors import InputError
from aoe_runner.results import find_result_files, load_all
from aoe_runner.summary import DEFAULT_MIN_GAIN_PCT, BankMerger, BankSummary


@dataclass
class Loaded:
    """A summary of whatever could be read, and one error per input that could not."""

    summary: BankSummary
    files_loaded: int
    errors: list[InputError] = field(default_factory=list)


def summarize_paths(arguments: Sequence[str], min_gain_pct: float = DEFAULT_MIN_GAIN_PCT) -> Loaded:
    paths, errors = find_result_files(arguments)
    merger = BankMerger()
    loaded = 0
    for item in load_all(paths):
        if isinstance(item, InputError):
            errors.append(item)
        else:
            merger.add_file(item)
            loaded += 1
    return Loaded(merger.summary(min_gain_pct), loaded, errors)


def diff_paths(
    old: Sequence[str],
    new: Sequence[str],
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
) -> tuple[BankDiff, Loaded, Loaded]:
    old_side = summarize_paths(old)
    new_side = summarize_paths(new)
    return diff_summaries(old_side.summary, new_side.summary, threshold_pct), old_side, new_side
