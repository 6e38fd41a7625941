"""`--format json`: the pydantic models as they are, the stable machine-readable output."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aoe_runner.jsontext import dump_json

if TYPE_CHECKING:
    from aoe_runner.diff import BankDiff
    from aoe_runner.summary import BankSummary

class JsonFormatter:
    def summary(self, summary: BankSummary, top: int | None) -> str:
        if top is not None:
            summary = summary.model_copy(update={"operators": summary.operators[:top], "subgraphs": summary.subgraphs[:top]})
        return dump_json(summary)

    def diff(self, diff: BankDiff, top: int | None) -> str:
        if top is not None:
            diff = diff.model_copy(update={"changes": diff.changes[:top]})
        return dump_json(diff)
