"""`--format json`: the pydantic models as they are, the stable machine-readable output.

A summary is written from its plain data with orjson, which writes every value as pydantic does but a float
with a positive exponent (`1e16`, pydantic `1e+16`) and cannot write a lone surrogate; for such a summary (rare:
hostile values or names) the pydantic model writes it. Tests compare both on every fixture, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from aoe_runner.common import collector
from aoe_runner.common.jsontext import dump_json
from aoe_runner.render.formats import DiffView, Formatter, SummaryView

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from aoe_runner.campaign.plan import CampaignPlan
    from aoe_runner.campaign.record import CampaignRecord
    from aoe_runner.common.terminal import Pieces
    from aoe_runner.errors import InputError
    from aoe_runner.preflight.report import PreflightReport
    from aoe_runner.releases.version import BankVersion
    from aoe_runner.report.diff import BankDiff
    from aoe_runner.report.entries import Entry
    from aoe_runner.report.models import BankSummary
    from aoe_runner.results.validation import FileCheck
    from aoe_runner.runs.best import Best
    from aoe_runner.runs.manifest import RunManifest
    from aoe_runner.runs.outcomes import RunListing
    from aoe_runner.store.status import StoreStatus
    from aoe_runner.verify.report import VerifyReport

_EXPONENT_FROM = 1e16  # orjson and pydantic both write floats from here on with an exponent, orjson without its +
_ENTRY_FLOATS = ("before_us", "after_us", "before_ms", "after_ms", "speedup", "time_saved_us", "time_saved_ms")


BATCH_ROWS = 512  # operator rows made and written at a time: their dicts stay in a core's cache (1 MiB here)
_ROWS_PLACE = b"\0"  # stands for the operators' rows in the rest of the summary: orjson escapes every control byte
# a batch of rows is written as {"operators": rows}, which indents them as the summary does; their text lies between
_ROWS_START, _ROWS_END = b'{\n  "operators": [', b"\n  ]\n}"


class JsonFormatter(Formatter):
    """`--format json`: the stable, machine-readable output (schemas/ holds its JSON Schemas)."""

    format_name = "json"

    def summary(self, view: SummaryView, top: int | None) -> str | Pieces:
        with collector.paused():  # tens of thousands of row dicts, no cycles: a collection would only walk them
            return self.summary_parts(*view.parts, top, lambda: view.summary)

    def diff(self, view: DiffView, top: int | None) -> str:
        return self.diff_model(view.diff, top)

    def preflight(self, report: PreflightReport, verbose: bool = False) -> str:
        return dump_json(report)

    def validation(self, checked: Sequence[FileCheck], errors: Sequence[InputError]) -> str:
        from aoe_runner.render.validate_report import validation_json

        return validation_json(checked, errors)

    def campaign_plan(self, plan: CampaignPlan) -> str:
        import json

        from aoe_runner.render.campaigns import plan_rows

        nodes = [{"name": n.name, "cpus": n.cpus, "memory_bytes": n.memory_bytes, "npus": n.npus} for n in plan.nodes]
        return json.dumps({"campaign": plan.campaign.name, "nodes": nodes, "jobs": plan_rows(plan)}, indent=2) + "\n"

    def campaign(self, record: CampaignRecord) -> str:
        return dump_json(record)

    def bank_versions(self, versions: list[BankVersion]) -> str:
        return "".join(dump_json(version, indent=None) + "\n" for version in versions)  # one version per line

    def campaign_list(self, records: list[CampaignRecord]) -> str:
        import json

        from aoe_runner.render.campaigns import list_rows

        return json.dumps(list_rows(records), indent=2) + "\n"

    def run_list(self, listing: RunListing) -> str:
        from aoe_runner.render.runs import run_list_json

        return run_list_json(listing)

    def run(self, manifest: RunManifest, directory: Path) -> str:
        return dump_json(manifest)

    def best(self, found: list[Best]) -> str:
        from aoe_runner.render.best import best_json

        return best_json(found)

    def verify(self, report: VerifyReport) -> str:
        return dump_json(report)

    def store_status(self, status: StoreStatus) -> str:
        from aoe_runner.render.store_status import store_status_json

        return store_status_json(status)

    def summary_model(self, summary: BankSummary, top: int | None) -> str:
        if top is not None:
            summary = summary.model_copy(update={"operators": summary.operators[:top], "subgraphs": summary.subgraphs[:top]})
        return dump_json(summary)

    def summary_parts(
        self, data: dict[str, Any], operators: list[Entry], top: int | None, model: Callable[[], BankSummary]
    ) -> str | Pieces:
        """The same text as summary_model(model(), top), from summary_data.summary_parts() (report.api.Loaded.parts), as
        UTF-8 pieces when orjson writes it (a large summary is written out as it is, never decoded and encoded
        again). The operators' rows are made BATCH_ROWS at a time, each batch written while its dicts are still in
        the CPU's cache, and the memory of one reused for the next."""
        from aoe_runner.report.summary_data import operator_rows

        if top is not None:
            data, operators = {**data, "subgraphs": data["subgraphs"][:top]}, operators[:top]
        batches = (operator_rows(operators[start : start + BATCH_ROWS]) for start in range(0, len(operators), BATCH_ROWS))
        pieces = json_pieces(data, batches)
        return pieces if pieces is not None else self.summary_model(model(), top)

    def diff_model(self, diff: BankDiff, top: int | None) -> str:
        if top is not None:
            diff = diff.model_copy(update={"changes": diff.changes[:top]})
        return dump_json(diff)


def json_pieces(data: dict[str, Any], operator_batches: Iterable[list[dict[str, Any]]]) -> Pieces | None:
    """Indented JSON of summary data exactly as pydantic's model_dump_json(indent=2) writes it, with a final newline,
    in UTF-8 pieces, the operators' rows taken from `operator_batches` in order (not from data); None when orjson
    cannot write it so. orjson indents as it writes, in one pass, where msgspec's encode, format and newline made
    three copies of a large summary.

    Each batch is written on its own, at the depth of the summary's operators, and spliced in where the rest of the
    summary holds a placeholder."""
    import orjson

    if _holds_exponent_float(data):
        return None
    try:
        text = orjson.dumps(
            {**data, "operators": orjson.Fragment(_ROWS_PLACE)},
            default=_model_data,
            option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE,
        )
        head, _, tail = text.partition(_ROWS_PLACE)
        pieces: Pieces = [head]
        for rows in operator_batches:
            if not rows:
                continue
            if _rows_hold_exponent_float(rows):
                return None
            batch = orjson.dumps({"operators": rows}, option=orjson.OPT_INDENT_2)
            pieces += (b"," if len(pieces) > 1 else b"[", memoryview(batch)[len(_ROWS_START) : -len(_ROWS_END)])
    except orjson.JSONEncodeError:  # a lone surrogate, an integer beyond 64 bits
        return None
    pieces += (b"\n  ]" if len(pieces) > 1 else b"[]", tail)
    return pieces


def _holds_exponent_float(data: dict[str, Any]) -> bool:
    """Is any float in this summary data but the operators' rows written with an exponent of 16 or more?"""
    if _rows_hold_exponent_float(data["subgraphs"]):
        return True
    return any(_any_big(item) for key, item in data.items() if key not in ("operators", "subgraphs"))


def _rows_hold_exponent_float(rows: list[dict[str, Any]]) -> bool:
    """Is any float in these entries' rows written with an exponent of 16 or more? Checked by field."""
    from aoe_runner.report.summary_data import largest_magnitude  # compiled with the summary where mypyc is

    names = [name for name in _ENTRY_FLOATS if rows and name in rows[0]]
    return bool(names) and _big(largest_magnitude(rows, names))


def _any_big(value: Any) -> bool:
    if type(value) is dict:
        return any(_any_big(item) for item in value.values())
    if type(value) is list:  # conflicts and no_real_gain: tens of thousands of strings, passed over in C
        return any(_any_big(item) for item in value if type(item) is not str)
    if hasattr(value, "model_dump"):
        return _any_big(value.model_dump(mode="json"))
    return _big(value)


def _big(value: Any) -> bool:
    return type(value) is float and not -_EXPONENT_FROM < value < _EXPONENT_FROM and value == value


def _model_data(value: Any) -> Any:
    """A pydantic model inside plain data (the legacy part of a summary) as pydantic writes it."""
    dump = getattr(value, "model_dump", None)
    if dump is None:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")
    return dump(mode="json")
