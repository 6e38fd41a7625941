"""Tables and lines that fit a terminal: columns narrowed, cells wrapped after a path separator or at a space.

`width` None means no limit (`--wide`, or output that is not a terminal): every function then returns its input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from wcwidth import wcswidth

GAP = 2  # between columns, as tabulate's "simple" and "plain" styles
_NARROWEST = 8  # a wrapped column keeps at least this many characters (or its header's longest word)
PIECES = re.compile(r"[^/\\ ]*(?:[/\\]+| +|$)")  # a path segment with its separator, or a word with its spaces
_HEADERPIECES = re.compile(r"[^ -]*(?:-+| +|$)")  # headers also break after a hyphen: "speed-" / "up"


def text_width(text: str) -> int:
    """Columns on a terminal: a CJK character takes two."""
    measured = wcswidth(text)
    return measured if measured >= 0 else len(text)


def wrap(text: str, width: int | None, pieces: re.Pattern[str] = PIECES) -> list[str]:
    """Lines of at most `width` columns, broken after `/` or at a space; only a longer piece is cut inside."""
    if width is None or text_width(text) <= width:
        return [text]
    lines: list[str] = []
    line = ""
    for piece in (p for p in pieces.findall(text) if p):
        if line and text_width(line + piece.rstrip(" ")) > width:
            lines.append(line.rstrip(" "))
            line = ""
        while text_width(piece.rstrip(" ")) > width:  # one segment longer than the column: cut it
            cut = _cut(piece, width)
            lines.append(piece[:cut])
            piece = piece[cut:]
        line += piece
    if line.strip() or not lines:
        lines.append(line.rstrip(" "))
    return lines


def wrap_line(text: str, width: int | None, indent: str = "") -> str:
    """One line of prose as several, the later ones indented."""
    if width is None:
        return text
    lead = len(text) - len(text.lstrip(" "))
    first, *rest = wrap(text, width)
    if not rest:
        return first
    more = wrap(text[len(first) :].lstrip(" "), max(width - lead - len(indent), _NARROWEST))  # the words as written
    return "\n".join([first, *(" " * lead + indent + line for line in more)])


def table(headers: Sequence[str] | None, rows: Sequence[Sequence[str]], width: int | None) -> str:
    """Left-aligned columns under a dashed rule (when there are headers), fitted to `width`.

    A cell may hold several lines (newlines): its row grows, as in tabulate's "simple" style. A table that does not
    fit even with every column at its narrowest puts one space between columns instead of two.
    """
    if not rows and not headers:
        return ""
    titles = list(headers) if headers else [""] * len(rows[0])
    titles, cells, gap = _fitted(titles, rows, width)
    header_rows = [titles] if headers else []
    widths = [max(_cell_width(cell) for cell in column) for column in zip(*header_rows, *cells, strict=True)]
    rule = [["-" * w for w in widths]] if headers else []
    lines: list[str] = []
    for row in [*header_rows, *rule, *cells]:
        split = [cell.split("\n") for cell in row]
        for index in range(max(len(parts) for parts in split)):
            parts = [part[index] if index < len(part) else "" for part in split]
            lines.append("".join(_pad(part, w) + " " * gap for part, w in zip(parts, widths, strict=True)).rstrip())
    return "\n".join(lines)


def _fitted(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None) -> tuple[list[str], list[list[str]], int]:
    titles, table = list(headers), [[str(cell) for cell in row] for row in rows]
    if width is None or not table:
        return titles, table, GAP
    natural = [max(_cell_width(cell) for cell in column) for column in zip(titles, *table, strict=True)]
    floors = [_floor(column) for column in zip(titles, *table, strict=True)]
    gap = GAP if sum(floors) + GAP * (len(floors) - 1) <= width else 1
    widths = _narrowed(natural, floors, width, gap)
    if widths == natural:
        return titles, table, gap
    titles = ["\n".join(wrap(title, w, _HEADERPIECES)) for title, w in zip(titles, widths, strict=True)]
    cells = [
        ["\n".join(wrap(cell, w)) if w < n else cell for cell, w, n in zip(row, widths, natural, strict=True)] for row in table
    ]
    return titles, cells, gap


def _narrowed(natural: list[int], floors: list[int], width: int, gap: int) -> list[int]:
    widths = list(natural)
    excess = sum(widths) + gap * (len(widths) - 1) - width
    while excess > 0:
        column = max(range(len(widths)), key=lambda i: widths[i] - floors[i])
        if widths[column] <= floors[column]:
            break  # as narrow as it can be: the terminal is narrower than the table can go
        widths[column] -= 1
        excess -= 1
    return widths


def _floor(column: Sequence[str]) -> int:
    """The narrowest a column may get: its header's longest word, and no cut inside a short unbroken piece."""
    header, *cells = column
    title = max((text_width(piece.strip()) for piece in _HEADERPIECES.findall(header)), default=0)
    piece = max((text_width(p.rstrip(" ")) for cell in cells for p in PIECES.findall(cell)), default=0)
    return max(title, min(piece, _NARROWEST))


def _pad(text: str, width: int) -> str:
    return text + " " * (width - text_width(text))


def _cell_width(cell: str) -> int:
    return max(text_width(line) for line in cell.split("\n"))


def _cut(piece: str, room: int) -> int:
    """How many characters of piece fit in `room` columns (at least one, so wrapping always moves on)."""
    used = 0
    for index, char in enumerate(piece):
        used += max(text_width(char), 0)
        if used > room:
            return max(index, 1)
    return len(piece)
