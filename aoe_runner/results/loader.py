"""Find result files from the paths a user gives, and load each into the normalised model."""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

from aoe_runner.errors import InputError
from aoe_runner.results.legacy import FILE_GLOB as LEGACY_FILE_GLOB
from aoe_runner.results.model import ResultFile
from aoe_runner.results.normalize import normalize
from aoe_runner.results.parsed import ParsedFile, from_result_file, from_typed
from aoe_runner.results.raw import RawDocument, decode
from aoe_runner.results.text import BOM
from aoe_runner.results.typed import NotTyped, decode_document, report_operators, without_operators

RESULT_FILE_GLOB = "aoe_result_*.json"
RESULT_FILE_GLOBS = (RESULT_FILE_GLOB, LEGACY_FILE_GLOB)  # what a directory search finds: AOE's and legacy Auto Tune's
_GLOB_CHARACTERS = frozenset("*?[")


def load_result_file(path: str | os.PathLike[str]) -> ResultFile:
    """Read and normalise one result file; raises InputError when it cannot be used."""
    where = os.fspath(path)
    data, mtime = read_regular_file(where)
    result_file = normalize(decode(data, where), where, os.path.basename(where))
    result_file.modified = _moment(mtime)
    return result_file


def read_regular_file(where: str) -> tuple[bytes, float]:
    """A file's bytes and mtime; InputError for anything but a regular file (a FIFO would block forever)."""
    data, info = read_with_status(where)
    return data, info.st_mtime


def read_with_status(where: str) -> tuple[bytes, os.stat_result]:
    """A file's bytes and its status as it was opened; InputError for anything but a regular file."""
    try:
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise InputError(where, "not a regular file (a FIFO, device or socket is never read)")
            return handle.read(), info
    except OSError as error:
        raise InputError(where, f"cannot read: {error.strerror or error}") from None


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


def find_result_files(arguments: Iterable[str]) -> tuple[list[Path], list[InputError]]:
    """Expand files, directories (searched recursively) and glob patterns, in a stable order.

    Every argument that names nothing usable becomes an InputError; the others still count.
    """
    found: dict[Path, None] = {}
    errors: list[InputError] = []
    for argument in arguments:
        try:
            for path in _expand(argument):
                found.setdefault(path, None)
        except InputError as error:
            errors.append(error)
    return list(found), errors


def load_all(paths: Iterable[Path]) -> Iterator[ResultFile | InputError]:
    """Load files one at a time, so memory holds one file however many there are."""
    for path in paths:
        try:
            yield load_result_file(path)
        except InputError as error:
            yield error


def _expand(argument: str) -> list[Path]:
    path = Path(argument)
    if path.is_dir():
        return _search_directory(path)
    if path.exists():
        return [path]
    if _GLOB_CHARACTERS & set(argument):
        matches = sorted(glob.glob(argument, recursive=True))
        if not matches:
            raise InputError(argument, "no files match this pattern")
        return [found for match in matches for found in _expand_match(Path(match))]
    raise InputError(argument, "no such file or directory")


def _expand_match(path: Path) -> list[Path]:
    return _search_directory(path) if path.is_dir() else [path]


def _search_directory(directory: Path) -> list[Path]:
    prefixes = tuple(pattern.removesuffix("*.json") for pattern in RESULT_FILE_GLOBS)
    files = sorted(p for p in directory.rglob("*_result_*.json") if p.name.startswith(prefixes) and p.is_file())  # one walk
    if not files:
        raise InputError(str(directory), f"no {' or '.join(RESULT_FILE_GLOBS)} files in this directory or below it")
    return files
