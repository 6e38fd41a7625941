"""A result file named on the command line that yields no report is bad input (exit 4), unless --allow-empty.

Such a file (0 bytes, only whitespace, `{}`, /dev/null, JSON cut off before its first report) would otherwise
pass as an empty summary with exit 0, and a CI step would pass on garbage. Files that a directory search or a
glob pattern finds are not named: AOE writes its files while it tunes, so such a search keeps skipping a file
that holds no report yet, with a warning when it is partial.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from aoe_runner.errors import InputError
from aoe_runner.regular_files import path_kind

if TYPE_CHECKING:
    from aoe_runner.reporting import Loaded
    from aoe_runner.summary import BankSummary, FileInfo

_WHITESPACE_READ = 64 * 1024  # a file this small is read to tell whitespace from a cut-off start


def reject_empty_named(loaded: Loaded, arguments: Sequence[str]) -> Loaded:
    """Each named file without a report becomes an InputError and leaves the summary (it added nothing else to it)."""
    named = named_files(arguments)
    empty = [info for info in loaded.summary.files if info.reports == 0 and info.path in named]
    if not empty:
        return loaded
    return replace(
        loaded,
        summary=_without(loaded.summary, empty),
        files_loaded=loaded.files_loaded - len(empty),
        errors=[*loaded.errors, *(InputError(info.path, reason(info)) for info in empty)],
    )


def named_files(arguments: Sequence[str]) -> set[str]:
    """The arguments that name a file (as the loader reports its path), not a directory or a glob pattern."""
    return {os.fspath(path) for path in map(Path, arguments) if path_kind(path) not in (None, "directory")}


def reason(info: FileInfo) -> str:
    return f"no report in this file: {_what_it_holds(info)}; --allow-empty accepts such a file"


def _what_it_holds(info: FileInfo) -> str:
    try:
        size = os.stat(info.path).st_size
    except OSError:
        size = None
    if size == 0:
        return "it is empty (0 bytes)"
    if not info.partial:
        return "it is an empty JSON object"
    if size is not None and size <= _WHITESPACE_READ and _only_whitespace(info.path):
        return "it holds only whitespace"
    return "it ends before its first report is complete (still being written, or not a result file)"


def _only_whitespace(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return not handle.read(_WHITESPACE_READ).removeprefix(b"\xef\xbb\xbf").strip()
    except OSError:
        return False


def _without(summary: BankSummary, empty: Collection[FileInfo]) -> BankSummary:
    paths = {info.path for info in empty}
    files, partial = summary.totals.files - len(empty), summary.totals.partial_files - sum(info.partial for info in empty)
    totals = summary.totals.model_copy(update={"files": files, "partial_files": partial})
    return summary.model_copy(update={"files": [info for info in summary.files if info.path not in paths], "totals": totals})
