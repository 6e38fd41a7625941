"""`aoe-runner validate` output: one line per file or violation (table), a JSON document, or CSV rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aoe_runner.errors import InputError
from aoe_runner.render import OutputFormat
from aoe_runner.render.safe_text import visible

SCHEMA_VERSION = 1
CSV_COLUMNS = ("file", "status", "json_path", "message")


@dataclass(frozen=True)
class FileCheck:
    path: str
    problems: Sequence[Any]  # validation problems with json_path and message


def render_validation(checked: Sequence[FileCheck], errors: Sequence[InputError], chosen: OutputFormat) -> str:
    if chosen is OutputFormat.JSON:
        return json.dumps(_document(checked, errors), indent=2, ensure_ascii=False) + "\n"
    if chosen is OutputFormat.CSV:
        from aoe_runner.render.csv_format import write_csv

        return write_csv(CSV_COLUMNS, _rows(checked, errors))
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
