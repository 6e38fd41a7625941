"""`aoe-runner validate`: check raw result files against the hand-written schema of AOE's format."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from aoe_runner.errors import InputError
from aoe_runner.results.raw import is_json_prefix

RAW_SCHEMA_NAME = "aoe-result.schema.json"


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
        source = Path(__file__).resolve().parent.parent / "schemas" / RAW_SCHEMA_NAME  # type: ignore[assignment]
    return json.loads(source.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def validate_file(path: Path) -> list[SchemaProblem]:
    """Every way the file departs from the schema; raises InputError when it is not readable JSON."""
    where = str(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as error:
        raise InputError(where, f"cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise InputError(where, f"not UTF-8 text (byte {error.start})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        hint = " (the file looks cut off: is AOE still writing it?)" if is_json_prefix(text) else ""
        raise InputError(where, f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}{hint}") from None
    return validate_document(document)


def validate_document(document: Any) -> list[SchemaProblem]:
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(raw_schema())
    problems = [SchemaProblem(error.json_path, error.message) for error in validator.iter_errors(document)]
    return sorted(problems, key=lambda p: p.json_path)
