"""The pieces every text table and markdown document is made of: titles, tables, prose, bullet lists, cells."""

from __future__ import annotations

from collections.abc import Sequence

from aoe_runner.common.colour import VERDICTS
from aoe_runner.common.safe_text import markdown, visible
from aoe_runner.render.table import Column
from aoe_runner.render.table import render as render_table
from aoe_runner.render.width import wrap, wrap_line

LEGACY_LAYOUT = "legacy_auto_tune"  # results/legacy.LAYOUT, without loading the legacy parser
PAIR_COLUMNS = [Column("name"), Column.prose("value")]  # a summary's totals: names whole, values wrapped


class TextBlocks:
    """Blocks for a terminal `width` columns wide (None: full lines), or markdown to paste."""

    def __init__(self, markdown: bool, width: int | None = None, colour: bool = False) -> None:
        self.markdown = markdown
        self.width = None if markdown else width  # markdown is pasted, never fitted to a terminal
        self.colours = VERDICTS if colour and not markdown else None

    def title(self, text: str) -> str:
        if self.markdown:
            return f"### {text}"
        lines = wrap(text, self.width)
        return "\n".join(lines) + "\n" + "-" * max(len(line) for line in lines)

    def table(self, columns: Sequence[Column], rows: Sequence[Sequence[object]]) -> str:
        """A table of these columns: fitted to the terminal (render/table.py), or in markdown."""
        cells = [[str(cell) for cell in row] for row in rows]
        if self.markdown:
            from tabulate import tabulate

            return tabulate(cells, headers=[column.header for column in columns], tablefmt="github", disable_numparse=True)
        return render_table(columns, cells, self.width, self.colours)

    def pairs(self, rows: Sequence[Sequence[object]]) -> str:
        """Names and values, two columns without headers; a long value wraps as prose."""
        cells = [[str(cell) for cell in row] for row in rows]
        if self.markdown:
            from tabulate import tabulate

            return tabulate(cells, headers=["", ""], tablefmt="github", disable_numparse=True)
        return render_table(PAIR_COLUMNS, cells, self.width, header=False)

    def prose(self, text: str) -> str:
        return wrap_line(text, self.width)

    def bullets(self, title: str, items: list[str]) -> list[str]:
        if not items:
            return []
        bullet = "- " if self.markdown else "  "
        room = None if self.width is None else max(self.width - len(bullet), 8)
        shown = (markdown(item, line_start=True) if self.markdown else visible(item) for item in items)
        lines = ("\n".join(bullet + line if i == 0 else " " * len(bullet) + line for i, line in enumerate(wrap(item, room)))
                 for item in shown)  # fmt: skip
        return [self.title(f"{title}: {len(items)}"), "\n".join(lines)]

    def text(self, text: str) -> str:
        return markdown(text) if self.markdown else visible(text)

    def name(self, name: str) -> str:
        """An operator's or entry's name, whole: the table cuts it in the middle only to fit a terminal."""
        return self.text(name)


def limited(title: str, rows: int, total: int) -> str:
    return f"{title} (top {rows} of {total}; --top N for more)" if total > rows else title


def flags(conflict: str | None) -> str:
    return "conflict" if conflict else ""


def num(value: float | None) -> str:
    return "" if value is None else f"{value:,.3f}".rstrip("0").rstrip(".")


def speedup(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}x"
