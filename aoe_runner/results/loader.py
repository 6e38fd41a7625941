"""Load result files into the normalised model, or into a ParsedFile for report when the normaliser must read them
(`parse.parse_result_file` decides; finding files: `files`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path

from aoe_runner.common.regular_files import read_regular_file
from aoe_runner.errors import InputError
from aoe_runner.results.model import ResultFile
from aoe_runner.results.normalize import normalize
from aoe_runner.results.parsed import ParsedFile, RawRecords, from_result_file
from aoe_runner.results.raw import RawDocument, decode
from aoe_runner.results.report_facts import moment_of_mtime
from aoe_runner.results.typed import TypedDocument, decode_records, report_operators, without_operators


def load_result_file(path: str | os.PathLike[str]) -> ResultFile:
    """Read and normalise one result file; raises InputError when it cannot be used."""
    where = os.fspath(path)
    data, mtime = read_regular_file(where)
    result_file = normalize(decode(data, where), where, os.path.basename(where))
    result_file.modified = moment_of_mtime(mtime)
    return result_file


def parse_typed(where: str, data: bytes, mtime: float, document: TypedDocument) -> ParsedFile:
    """A typed file that is not plain (parse.parse_result_file): its reports through the normaliser, its records left
    raw for the merge to decode and check (parsed.RawRecords), which takes the whole file through the normaliser from
    the first record that is not plain."""
    entries = without_operators(document)
    result_file = normalize(RawDocument("training", entries), where, os.path.basename(where))
    result_file.modified = moment_of_mtime(mtime)
    parts = list(document.values())
    parsed = from_result_file(result_file)
    operator_lists = [report_operators(parts[report.index]) for report in result_file.reports]
    parsed.raw = RawRecords(operator_lists, decode_records, partial(parse_normalized, where, data, mtime))
    return parsed


def parse_normalized(where: str, data: bytes, mtime: float, typed: bool) -> ParsedFile:
    """Any file through the generic decoder and the normaliser (`typed`: it decodes as typed structs)."""
    result_file = normalize(decode(data, where, typed=typed), where, os.path.basename(where))
    result_file.modified = moment_of_mtime(mtime)
    return from_result_file(result_file)


def load_all(paths: Iterable[Path]) -> Iterator[ResultFile | InputError]:
    """Load files one at a time, so memory holds one file however many there are."""
    for path in paths:
        try:
            yield load_result_file(path)
        except InputError as error:
            yield error
