"""`aoe-runner validate`: check raw result files against the hand-written schema of AOE's format."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from aoe_runner.common.regular_files import read_regular_file
from aoe_runner.errors import InputError
from aoe_runner.results.raw import is_json_prefix, refuse_dense
from aoe_runner.results.text import (
    BOM,
    SURROGATE,
    TOO_DEEP,
    JsonPath,
    Utf8Repair,
    escaped,
    loads,
    lone_surrogates,
    may_hold_lone_surrogates,
    repaired_text,
    shortened,
)

RAW_SCHEMA_NAME = "aoe-result.schema.json"
_MESSAGE_CHARACTERS = 300


@dataclass(frozen=True)
class SchemaProblem:
    json_path: str
    message: str


@lru_cache(maxsize=1)
def raw_schema() -> dict[str, Any]:
    """The schema installed with the package, or schemas/ beside it when running from a source checkout."""
    try:
        source = resources.files("aoe_runner.schemas").joinpath(RAW_SCHEMA_NAME)
    except ModuleNotFoundError:
        source = Path(__file__).resolve().parent.parent / "schemas" / RAW_SCHEMA_NAME
    return json.loads(source.read_text(encoding="utf-8"))


def validate_file(path: Path) -> list[SchemaProblem]:
    """Every way the file departs from the schema, from UTF-8 or from Unicode; InputError when it is not readable JSON.

    It reads the bytes as `report` does: invalid UTF-8 as U+FFFD, lone surrogates kept, integers of any length.
    """
    where = str(path)
    data = read_regular_file(where)[0].removeprefix(BOM)
    text, repair = repaired_text(data)
    try:
        document = _parse(text, where, repair)
        problems = validate_document(document)
    except RecursionError:
        raise InputError(where, TOO_DEEP) from None
    if repair is not None:
        problems.insert(0, SchemaProblem("$", repair.describe()))
    if may_hold_lone_surrogates(text):
        problems += [_lone_surrogate_problem(elements, string) for elements, string in lone_surrogates(document)]
    return problems


def _parse(text: str, where: str, repair: Utf8Repair | None) -> Any:
    refuse_dense(text, where)
    try:
        return loads(text)
    except json.JSONDecodeError as error:
        if repair is not None:  # the encoding is the first thing wrong; the JSON error may only follow from it
            raise InputError(where, f"not UTF-8 text (byte {repair.first_bad_byte})") from None
        hint = " (the file looks cut off: is AOE still writing it?)" if is_json_prefix(text) else ""
        raise InputError(where, f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}{hint}") from None


def validate_document(document: Any) -> list[SchemaProblem]:
    """Every way the document departs from the schema. jsonschema-rs (compiled) first says whether there is any,
    about 150 times faster than jsonschema on a result file; only a document it finds invalid, or cannot take (an
    integer beyond 64 bits, a lone surrogate), is walked by jsonschema, whose messages and paths are shown."""
    if _valid_by_the_compiled_validator(document):
        return []
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(raw_schema())
    problems = [_problem(error.json_path, error.message) for error in validator.iter_errors(document)]
    return sorted(problems, key=lambda p: p.json_path)


def _valid_by_the_compiled_validator(document: Any) -> bool:
    try:
        return bool(_compiled_validator().is_valid(document))
    except Exception:  # noqa: BLE001 (a value it cannot convert: jsonschema decides)
        return False


@lru_cache(maxsize=1)
def _compiled_validator() -> Any:
    import jsonschema_rs

    return jsonschema_rs.validator_for(raw_schema())


def _lone_surrogate_problem(elements: JsonPath, string: str) -> SchemaProblem:
    from jsonschema.exceptions import ValidationError

    code = ord(SURROGATE.search(string).group())  # type: ignore[union-attr]
    where = ValidationError("", path=elements).json_path  # written exactly as jsonschema writes its paths
    return _problem(where, f'lone surrogate \\u{code:04x} in "{shortened(string, 60)}": not valid Unicode')


def _problem(json_path: str, message: str) -> SchemaProblem:
    """A problem that can always be printed: lone surrogates escaped, a long message (a huge value quoted) cut."""
    return SchemaProblem(escaped(json_path), escaped(shortened(message, _MESSAGE_CHARACTERS)))


@dataclass(frozen=True)
class FileCheck:
    """One file's validation: its problems, none when it is valid."""

    path: str
    problems: Sequence[SchemaProblem]


def validate_paths(arguments: Sequence[str]) -> tuple[list[FileCheck], list[InputError]]:
    """Every result file the arguments name, checked; one error per argument or file that could not be read."""
    from aoe_runner.results.files import find_result_files

    files, errors = find_result_files(arguments)
    checked: list[FileCheck] = []
    for path in files:
        try:
            checked.append(FileCheck(str(path), validate_file(path)))
        except InputError as error:
            errors.append(error)
    return checked, errors
