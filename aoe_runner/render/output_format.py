"""The output formats a user names with --format, and the one place that builds the Formatter each names."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aoe_runner.render.formats import Formatter
    from aoe_runner.render.html.page import PageContext


class OutputFormat(str, Enum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"
    MARKDOWN = "markdown"
    HTML = "html"  # a whole page, written with -o FILE (render/html)

    def formatter(self, width: int | None = None, page: PageContext | None = None, colour: bool = False) -> Formatter:
        """The formatter this choice names (tables fit `width` columns, pages carry `page`); modules load only when
        chosen."""
        if self is OutputFormat.JSON:
            from aoe_runner.render.json_format import JsonFormatter

            return JsonFormatter()
        if self is OutputFormat.CSV:
            from aoe_runner.render.csv_format import CsvFormatter

            return CsvFormatter()
        if self is OutputFormat.HTML:
            from aoe_runner.render.html.formatter import HtmlFormatter
            from aoe_runner.render.html.page import PageContext

            return HtmlFormatter(page or PageContext.of([]))
        from aoe_runner.render.tables import TableFormatter

        return TableFormatter(markdown=self is OutputFormat.MARKDOWN, width=width, colour=colour)
