"""`--format html`: whole pages for `report`, `report --diff`, `verify`, `runs report` and `campaign status`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aoe_runner.common.terminal import Document
from aoe_runner.render.formats import DiffView, Formatter, SummaryView
from aoe_runner.render.html.page import DEFAULT_TOP, Page, PageContext, render

if TYPE_CHECKING:
    from aoe_runner.campaign.record import CampaignRecord
    from aoe_runner.runs.savings import HistoryRun
    from aoe_runner.verify.report import VerifyReport


@dataclass
class HtmlFormatter(Formatter):
    context: PageContext
    format_name = "html"

    def summary(self, view: SummaryView, top: int | None) -> Document:
        from aoe_runner.render.html.summary_page import summary_page

        return render(_warned(summary_page(view.data, top or DEFAULT_TOP), view.problems), self.context)

    def diff(self, view: DiffView, top: int | None) -> Document:
        from aoe_runner.render.html.diff_page import diff_page

        return render(_warned(diff_page(view.diff, top or DEFAULT_TOP, view.drift), view.problems), self.context)

    def verify(self, report: VerifyReport) -> Document:
        from aoe_runner.render.html.verify_page import verify_page

        return render(verify_page(report, report.step_times_ms), self.context)

    def campaign(self, record: CampaignRecord) -> Document:
        from aoe_runner.render.html.campaign_page import campaign_page

        return render(campaign_page(record), self.context)

    def history(self, runs: list[HistoryRun], script: str | None) -> Document:
        from aoe_runner.render.html.history_page import history_page

        return render(history_page(runs, script), self.context)


def _warned(page: Page, problems: list[str]) -> Page:
    """The page with a warning per input left out, so a page passed on never looks like the whole picture."""
    page.warnings.extend(f"left out, could not be read: {problem}" for problem in problems)
    return page
