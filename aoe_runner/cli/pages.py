"""The formatter a command writes with: --format (or --json) checked against the command's formats, fitted to the
terminal; for html, a page that names the command that made it and goes to -o FILE."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aoe_runner.cli.options import HTML, choose_format
from aoe_runner.cli.terminal import INVOKED, terminal
from aoe_runner.common import colour
from aoe_runner.common.files import STDOUT
from aoe_runner.errors import UsageError

if TYPE_CHECKING:
    from aoe_runner.render.formats import Formatter
    from aoe_runner.render.html.page import PageContext
    from aoe_runner.render.output_format import OutputFormat


def formatter_for(
    output_format: str | None, as_json: bool, formats: Sequence[OutputFormat], output: str | None, wide: bool = False
) -> Formatter:
    """The formatter of the format asked for (table when none is), among those the command offers."""
    chosen = choose_format(output_format, as_json, formats)
    if chosen is HTML:
        return chosen.formatter(page=page_context(output))
    to_terminal = output is None or output == STDOUT
    width = terminal.width(wide) if to_terminal else None  # a file gets every column and every cell whole
    return chosen.formatter(width=width, colour=to_terminal and colour.wanted(terminal.out))


def page_context(output: str | None) -> PageContext:
    """A page is written to -o FILE (or `-o -`, stdout, asked for by name): never megabytes onto a terminal by default.
    plotly.min.js is read here too, so a broken install is refused before the work (verify's runs), not after."""
    from aoe_runner.render.html.assets import plotly_js
    from aoe_runner.render.html.page import PageContext

    if output is None:
        raise UsageError(
            "--format html writes a whole page (about 5 MB with its charting library): give -o FILE, or -o - for stdout"
        )
    plotly_js()
    return PageContext.of(INVOKED)
