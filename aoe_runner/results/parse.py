"""One result file's bytes as `report` merges them (a ParsedFile), the cheapest way the file allows.

A plain current-format training file (most files) is decoded into typed structs and read without the normaliser,
so without pydantic; a typed file with anything the normaliser warns about, fixes up or ignores takes the normaliser
for its reports (and its records too when one of them needs it); any other file is decoded and normalised as
`loader.load_result_file` does. Every way gives the same records, facts and warnings (tests compare them).
"""

from __future__ import annotations

import os
from functools import partial

from aoe_runner.results.parsed import ParsedFile, RawRecords
from aoe_runner.results.plain_reports import plain_report_facts
from aoe_runner.results.report_facts import moment_of_mtime
from aoe_runner.results.text import BOM
from aoe_runner.results.typed import NotTyped, decode_document, decode_records, report_operators


def parse_result_file(where: str, data: bytes, mtime: float) -> ParsedFile:
    """Raises InputError as loader.load_result_file does."""
    try:
        document = decode_document(data.removeprefix(BOM), raw_records=True)
    except (NotTyped, RecursionError, UnicodeDecodeError):  # the normaliser's decoder handles each
        return _normalized(where, data, mtime, typed=False)
    facts = plain_report_facts(document, os.path.basename(where), moment_of_mtime(mtime))
    if facts is None:
        from aoe_runner.results import loader

        return loader.parse_typed(where, data, mtime, document)
    parsed = ParsedFile(where, "training", False, [], facts)
    operator_lists = [report_operators(parts) for parts in document.values()]
    parsed.raw = RawRecords(operator_lists, decode_records, partial(_normalized, where, data, mtime))
    return parsed


def _normalized(where: str, data: bytes, mtime: float, typed: bool) -> ParsedFile:
    from aoe_runner.results import loader

    return loader.parse_normalized(where, data, mtime, typed=typed)
