"""`--format html` for `report` and `report --diff`: the render.Formatter interface, writing whole pages."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aoe_runner.html.page import DEFAULT_TOP, Page, PageContext, render
from aoe_runner.terminal import Document

if TYPE_CHECKING:
    from aoe_runner.diff import BankDiff
    from aoe_runner.summary import BankSummary


@dataclass
class HtmlFormatter:
    context: PageContext
    drift: list[str] = field(default_factory=list)  # environment differences of the two runs a diff compares
    problems: list[str] = field(default_factory=list)  # inputs that could not be read (the CLI adds them): left out

    def summary_data(self, data: dict[str, Any], top: int | None, model: Callable[[], BankSummary]) -> Document:
        from aoe_runner.html.summary_page import summary_page

        return render(self._warned(summary_page(data, top or DEFAULT_TOP)), self.context)

    def summary(self, summary: BankSummary, top: int | None) -> Document:
        data = summary.model_dump(mode="json")  # the plain data the page reads, as Loaded.data holds it
        data["legacy"] = summary.legacy
        return self.summary_data(data, top, lambda: summary)

    def diff(self, diff: BankDiff, top: int | None) -> Document:
        from aoe_runner.html.diff_page import diff_page

        return render(self._warned(diff_page(diff, top or DEFAULT_TOP, self.drift)), self.context)

    def _warned(self, page: Page) -> Page:
        """The page with a warning per input left out, so a page passed on never looks like the whole picture."""
        page.warnings.extend(f"left out, could not be read: {problem}" for problem in self.problems)
        return page
