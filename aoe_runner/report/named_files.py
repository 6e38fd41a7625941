"""A result file named on the command line that yields no report is bad input (exit 4), unless --allow-empty.

Such a file (0 bytes, only whitespace, `{}`, /dev/null, JSON cut off before its first report) would otherwise
pass as an empty summary with exit 0, and a CI step would pass on garbage. Files that a directory search or a
glob pattern finds are not named: AOE writes its files while it tunes, so such a search keeps skipping a file
that holds no report yet, with a warning when it is partial.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from aoe_runner.common.regular_files import path_kind

if TYPE_CHECKING:
    from aoe_runner.report.merge import FileRow

_WHITESPACE_READ = 64 * 1024  # a file this small is read to tell whitespace from a cut-off start


def named_files(arguments: Sequence[str]) -> set[object]:
    """The files the arguments name (files.file_identity: however else a search reaches them), not a directory or a
    glob pattern."""
    from aoe_runner.results.files import file_identity

    return {file_identity(path) for path in map(Path, arguments) if path_kind(path) not in (None, "directory")}


def reason(info: FileRow) -> str:
    return f"no report in this file: {_what_it_holds(info)}; --allow-empty accepts such a file"


def _what_it_holds(info: FileRow) -> str:
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
