"""Output formats: each one renders a summary or a diff to text through the same small interface.

This module stays import-light (no pydantic models): the CLI needs OutputFormat for `--help`.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from aoe_runner.diff import BankDiff
    from aoe_runner.summary import BankSummary


class Formatter(Protocol):
    """Text, or a whole document's bytes (terminal.Document: an HTML page)."""

    def summary(self, summary: BankSummary, top: int | None) -> str | bytes: ...

    def diff(self, diff: BankDiff, top: int | None) -> str | bytes: ...


class OutputFormat(str, Enum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"
    MARKDOWN = "markdown"
    HTML = "html"  # a whole page, written with -o FILE (aoe_runner.html)

    def formatter(self, width: int | None = None) -> Formatter:
        """Build the formatter this choice names (tables fit `width` columns); modules load only when chosen."""
        if self is OutputFormat.JSON:
            from aoe_runner.render.json_format import JsonFormatter

            return JsonFormatter()
        if self is OutputFormat.HTML:
            from aoe_runner.html.formatter import HtmlFormatter
            from aoe_runner.html.page import PageContext

            return HtmlFormatter(PageContext.of([]))
        if self is OutputFormat.CSV:
            from aoe_runner.render.csv_format import CsvFormatter

            return CsvFormatter()
        from aoe_runner.render.tables import TableFormatter

        return TableFormatter(markdown=self is OutputFormat.MARKDOWN, width=width)
