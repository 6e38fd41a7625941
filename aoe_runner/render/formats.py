"""The one interface of every output format: a Formatter writes each kind of document aoe-runner prints.

Each format (tables.py for table and markdown, csv_format.py, json_format.py, html/formatter.py) implements it, and
output_format.OutputFormat chooses one. A command offers only the formats it lists (cli.options.choose_format), so
a format is never asked for a document it does not write; if it were, that is a usage error naming the format.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from aoe_runner.errors import InputError, UsageError

if TYPE_CHECKING:
    from aoe_runner.campaign.plan import CampaignPlan
    from aoe_runner.campaign.record import CampaignRecord
    from aoe_runner.common.terminal import Pieces
    from aoe_runner.preflight.report import PreflightReport
    from aoe_runner.releases.version import BankVersion
    from aoe_runner.report.diff import BankDiff
    from aoe_runner.report.entries import Entry
    from aoe_runner.report.models import BankSummary
    from aoe_runner.results.validation import FileCheck
    from aoe_runner.runs.best import Best
    from aoe_runner.runs.manifest import RunManifest
    from aoe_runner.runs.outcomes import RunListing
    from aoe_runner.runs.savings import HistoryRun
    from aoe_runner.store.status import StoreStatus
    from aoe_runner.verify.report import VerifyReport

    Output = str | bytes | Pieces


class SummaryView(Protocol):
    """A bank summary in the forms formats read it (report.api.Loaded): each is made only when asked for."""

    @property
    def parts(self) -> tuple[dict[str, Any], list[Entry]]: ...

    @property
    def data(self) -> dict[str, Any]: ...

    @property
    def summary(self) -> BankSummary: ...

    @property
    def problems(self) -> list[str]: ...


class DiffView(Protocol):
    """A diff of two sets of results (report.api.Compared), with what a page says beside it."""

    @property
    def diff(self) -> BankDiff: ...

    @property
    def problems(self) -> list[str]: ...

    @property
    def drift(self) -> list[str]: ...


class Formatter:
    """One output format: each method writes one kind of document."""

    format_name = "table"

    def summary(self, view: SummaryView, top: int | None) -> Output:
        raise self.not_offered("report")

    def diff(self, view: DiffView, top: int | None) -> Output:
        raise self.not_offered("report --diff")

    def preflight(self, report: PreflightReport, verbose: bool = False) -> Output:
        raise self.not_offered("preflight")

    def validation(self, checked: Sequence[FileCheck], errors: Sequence[InputError]) -> Output:
        raise self.not_offered("validate")

    def run_list(self, listing: RunListing) -> Output:
        raise self.not_offered("runs list")

    def run(self, manifest: RunManifest, directory: Path) -> Output:
        raise self.not_offered("runs show")

    def best(self, found: list[Best]) -> Output:
        raise self.not_offered("bank best")

    def verify(self, report: VerifyReport) -> Output:
        raise self.not_offered("verify")

    def store_status(self, status: StoreStatus) -> Output:
        raise self.not_offered("store status")

    def history(self, runs: list[HistoryRun], script: str | None) -> Output:
        raise self.not_offered("runs report")

    def campaign_plan(self, plan: CampaignPlan) -> Output:
        raise self.not_offered("campaign check")

    def campaign(self, record: CampaignRecord) -> Output:
        raise self.not_offered("campaign status")

    def campaign_list(self, records: list[CampaignRecord]) -> Output:
        raise self.not_offered("campaign list")

    def bank_versions(self, versions: list[BankVersion]) -> Output:
        raise self.not_offered("bank versions")

    def not_offered(self, command: str) -> UsageError:
        return UsageError(f"--format: {self.format_name} is not offered by {command}")
