"""Load result files into the normalised model, or into columns for report (finding them: `files`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

from aoe_runner.errors import InputError
from aoe_runner.results.files import read_regular_file
from aoe_runner.results.model import ResultFile
from aoe_runner.results.normalize import normalize
from aoe_runner.results.parsed import ParsedFile, from_result_file, from_typed
from aoe_runner.results.raw import RawDocument, decode
from aoe_runner.results.text import BOM
from aoe_runner.results.typed import NotTyped, decode_document, report_operators, without_operators


def load_result_file(path: str | os.PathLike[str]) -> ResultFile:
    """Read and normalise one result file; raises InputError when it cannot be used."""
    where = os.fspath(path)
    data, mtime = read_regular_file(where)
    result_file = normalize(decode(data, where), where, os.path.basename(where))
    result_file.modified = _moment(mtime)
    return result_file


def parse_result_file(where: str, data: bytes, mtime: float) -> ParsedFile:
    """One file's bytes as report merges them: typed structs straight into columns when the file allows, else
    through the normaliser; the same records and warnings either way. Raises InputError as load_result_file."""
    try:
        document = decode_document(data.removeprefix(BOM))
    except (NotTyped, RecursionError, UnicodeDecodeError):  # the normaliser's decoder handles each
        return from_result_file(_normalized(where, data, mtime, typed=False))
    entries = without_operators(document)
    result_file = normalize(RawDocument("training", entries), where, os.path.basename(where))
    result_file.modified = _moment(mtime)
    parts = list(document.values())
    parsed = from_typed(result_file, [report_operators(parts[report.index]) for report in result_file.reports])
    return parsed if parsed is not None else from_result_file(_normalized(where, data, mtime, typed=True))


def _normalized(where: str, data: bytes, mtime: float, typed: bool) -> ResultFile:
    result_file = normalize(decode(data, where, typed=typed), where, os.path.basename(where))
    result_file.modified = _moment(mtime)
    return result_file


def _moment(timestamp: float) -> datetime | None:
    """A file time as a local datetime; None for one that datetime cannot hold (touch -d can set any)."""
    try:
        return datetime.fromtimestamp(timestamp)
    except (OverflowError, ValueError, OSError):
        return None


def load_all(paths: Iterable[Path]) -> Iterator[ResultFile | InputError]:
    """Load files one at a time, so memory holds one file however many there are."""
    for path in paths:
        try:
            yield load_result_file(path)
        except InputError as error:
            yield error
