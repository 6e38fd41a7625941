"""Generate the JSON Schemas of aoe-runner's own JSON outputs from their pydantic models and plain dataclasses.

Run `python -m aoe_runner.schema_export` after changing a model; a test fails while schemas/ is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import TypeAdapter

from aoe_runner.preflight.facts import HostFacts
from aoe_runner.preflight.report import PreflightReport
from aoe_runner.report.diff import BankDiff
from aoe_runner.report.models import BankSummary
from aoe_runner.results.model import ResultFile
from aoe_runner.runs.manifest import RunManifest
from aoe_runner.verify.report import VerifyReport

SCHEMA_DIRECTORY = Path(__file__).resolve().parent.parent / "schemas"
GENERATED: dict[str, type] = {
    "bank-summary.schema.json": BankSummary,
    "bank-diff.schema.json": BankDiff,
    "result-file.schema.json": ResultFile,
    "preflight-report.schema.json": PreflightReport,
    "host-facts.schema.json": HostFacts,
    "run-manifest.schema.json": RunManifest,
    "verify-report.schema.json": VerifyReport,
}


def generated_schema(name: str) -> str:
    model = GENERATED[name]
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "Generated from the models by `python -m aoe_runner.schema_export`; do not edit.",
        **TypeAdapter(model).json_schema(mode="serialization"),
    }
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def write_all(directory: Path = SCHEMA_DIRECTORY) -> list[Path]:
    written = []
    for name in GENERATED:
        path = directory / name
        path.write_text(generated_schema(name), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_DIRECTORY):
        print(path)
