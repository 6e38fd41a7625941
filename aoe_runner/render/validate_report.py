"""`aoe-runner validate` output: one line per file or violation (table), a JSON document, or CSV rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from aoe_runner.common.safe_text import visible
from aoe_runner.errors import InputError

if TYPE_CHECKING:
    from aoe_runner.results.validation import FileCheck

SCHEMA_VERSION = 1
CSV_COLUMNS = ("file", "status", "json_path", "message")


def validation_json(checked: Sequence[FileCheck], errors: Sequence[InputError]) -> str:
    return json.dumps(_document(checked, errors), indent=2, ensure_ascii=False) + "\n"


def validation_csv(checked: Sequence[FileCheck], errors: Sequence[InputError]) -> str:
    from aoe_runner.render.csv_text import write_csv

    return write_csv(CSV_COLUMNS, _rows(checked, errors))


def validation_text(checked: Sequence[FileCheck]) -> str:
    """One line per violation, or `valid`; unreadable files are said on stderr, as every error is."""
    lines = []
    for check in checked:
        lines += [visible(f"{check.path}: {p.json_path}: {p.message}") for p in check.problems]
        if not check.problems:
            lines.append(visible(f"{check.path}: valid"))
    return "".join(line + "\n" for line in lines)


def _document(checked: Sequence[FileCheck], errors: Sequence[InputError]) -> dict[str, object]:
    files = [
        {
            "path": check.path,
            "valid": not check.problems,
            "violations": [{"json_path": p.json_path, "message": p.message} for p in check.problems],
        }
        for check in checked
    ]
    unreadable = [{"path": error.where, "reason": error.reason} for error in errors]
    return {"schema_version": SCHEMA_VERSION, "files": files, "unreadable": unreadable}


def _rows(checked: Sequence[FileCheck], errors: Sequence[InputError]) -> list[tuple[str, str, str, str]]:
    rows = []
    for check in checked:
        rows += [(check.path, "invalid", p.json_path, p.message) for p in check.problems]
        if not check.problems:
            rows.append((check.path, "valid", "", ""))
    return rows + [(error.where, "unreadable", "", error.reason) for error in errors]
