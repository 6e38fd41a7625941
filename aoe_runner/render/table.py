"""The one table every command prints: it fits a terminal without ever breaking a word.

Identifiers and numbers (run ids, hashes, modes, timestamps, figures) are never split. When the table is wider
than the terminal, it gives up room in this order, and says under the table what it did:
1. optional columns whose cell is the same in every row (a `flag` column with no flag, `tuned` always 1) are left
   out, and their one value is said once;
2. free-text columns (operator names, script paths) are cut in the middle with `…`, keeping head and tail, the
   widest first, down to a floor;
3. prose columns (a check's fix, what it observed) wrap between words and after a path's `/`, never inside a
   word or a name.
What still does not fit runs past the edge, whole. `width` None (`--wide`, or no terminal) shows every column and
every cell whole. wcwidth measures cells, so a CJK name takes the two columns it takes on screen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum

from aoe_runner.common.colour import paint
from aoe_runner.render.width import GAP, PIECES, text_width, wrap, wrap_line

TEXT_FLOOR = 16  # a cut text column keeps at least this many columns (or its header's width)
PROSE_FLOOR = 12  # a wrapped prose column, likewise, but never less than its longest word
CUT = "…"


class Kind(Enum):
    ID = "id"  # never cut or wrapped: run ids, modes, statuses, timestamps
    NUMBER = "number"  # likewise
    TEXT = "text"  # may be cut in the middle: names and paths
    PROSE = "prose"  # may wrap between words: sentences, fixes


@dataclass(frozen=True)
class Column:
    header: str
    kind: Kind = Kind.ID
    optional: bool = False  # may be left out when it is the same in every row, or to fit
    keep: int = 0  # of optional columns left out to fit, those of lower keep go first (then the rightmost)
    verdict: bool = False  # holds words aoe-runner writes (FAIL, regressed): painted on a terminal, never a name

    @classmethod
    def text(cls, header: str) -> Column:
        return cls(header, Kind.TEXT)

    @classmethod
    def prose(cls, header: str) -> Column:
        return cls(header, Kind.PROSE)

    @classmethod
    def number(cls, header: str, optional: bool = False, keep: int = 0) -> Column:
        return cls(header, Kind.NUMBER, optional, keep=keep)


def render(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int | None,
    colours: Mapping[str, str] | None = None,
    header: bool = True,
) -> str:
    """Left-aligned columns under a dashed rule, fitted to `width` columns; notes on what was left out or cut. A cell
    that is one of `colours`' words is painted in its colour (after the layout, which measures the text alone).
    `header` False: names and values, without the headers and the rule (the headers still set no width then)."""
    cells = [[str(cell) for cell in row] for row in rows]
    if not header:
        columns = [replace(column, header="") for column in columns]
    shown, widths, notes = _layout(list(columns), cells, width)
    kept = [columns[index] for index in shown]
    lines = [_line([c.header for c in kept], widths), _line(["-" * w for w in widths], widths)] if header else []
    painted = [colours if column.verdict else None for column in kept]
    cut = False
    for row in cells:
        values = [row[index] for index in shown]
        fitted = [_fit_cell(cell, column.kind, w) for cell, column, w in zip(values, kept, widths, strict=True)]
        cut = cut or any(
            part[0] != cell for part, cell, column in zip(fitted, values, kept, strict=True) if column.kind is Kind.TEXT
        )
        for index in range(max(len(part) for part in fitted)):
            lines.append(_line([part[index] if index < len(part) else "" for part in fitted], widths, painted))
    if cut:
        notes.append(f"{CUT} marks text cut to fit the terminal: a wider terminal, --wide or a pipe shows more")
    return "\n".join(lines + [wrap_line(f"({note})", width, " ") for note in notes])


def _layout(columns: list[Column], cells: list[list[str]], width: int | None) -> tuple[list[int], list[int], list[str]]:
    """The columns to show, their widths, and notes on what was left out: every column at its natural width when it
    fits; else without optional columns that are the same in every row, text cut and prose wrapped; then without
    the other optional columns, lowest `keep` and then rightmost first, until it fits (or none is left to leave out)."""
    everything = list(range(len(columns)))
    natural = _natural(columns, cells)
    if width is None or not cells or _total(natural) <= width:
        return everything, natural, []
    constant = {i: cells[0][i] for i, column in enumerate(columns) if column.optional and len({row[i] for row in cells}) == 1}
    notes = [f"{columns[index].header}: {value or 'none'} in every row, not shown" for index, value in constant.items()]
    shown = [index for index in everything if index not in constant]
    optional = sorted((index for index in shown if columns[index].optional), key=lambda i: (columns[i].keep, -i))
    for dropped in range(len(optional) + 1):
        left_out = optional[:dropped]
        candidate = [index for index in shown if index not in left_out]
        widths = _fitted([columns[index] for index in candidate], [[row[index] for index in candidate] for row in cells], width)
        if _total(widths) <= width:
            break
    if left_out:
        names = ", ".join(columns[index].header for index in left_out)
        notes.append(f"not shown to fit the terminal: {names}; a wider terminal, --wide or a pipe shows them")
    return candidate, widths, notes


def _natural(columns: Sequence[Column], cells: list[list[str]]) -> list[int]:
    return [max([text_width(column.header), *(text_width(row[index]) for row in cells)]) for index, column in enumerate(columns)]


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + GAP * max(len(widths) - 1, 0)


def _fitted(columns: Sequence[Column], cells: list[list[str]], width: int | None) -> list[int]:
    """Column widths: natural, then text columns narrowed (widest first), then prose columns, down to their floors."""
    widths = _natural(columns, cells)
    if width is None:
        return widths
    floors = [_floor(column, [row[index] for row in cells]) for index, column in enumerate(columns)]
    for kind in (Kind.TEXT, Kind.PROSE):
        candidates = [index for index, column in enumerate(columns) if column.kind is kind]
        while _total(widths) > width:
            roomy = [index for index in candidates if widths[index] > floors[index]]
            if not roomy:
                break
            widest = max(roomy, key=lambda index: widths[index])
            widths[widest] -= 1
    return widths


def _floor(column: Column, cells: list[str]) -> int:
    header = text_width(column.header)
    if column.kind is Kind.TEXT:
        return max(header, min(TEXT_FLOOR, max((text_width(cell) for cell in cells), default=0)))
    if column.kind is Kind.PROSE:
        longest_word = max((text_width(word.rstrip(" ")) for cell in cells for word in PIECES.findall(cell)), default=0)
        return max(header, PROSE_FLOOR, longest_word)
    return max([header, *(text_width(cell) for cell in cells)])


def _fit_cell(cell: str, kind: Kind, width: int) -> list[str]:
    if text_width(cell) <= width:
        return [cell]
    if kind is Kind.TEXT:
        return [middle_cut(cell, width)]
    if kind is Kind.PROSE:
        return wrap(cell, width)  # between words and after a path's separators
    return [cell]  # an identifier runs past its column rather than break


def middle_cut(text: str, width: int) -> str:
    """`text` in `width` columns: its head and tail around `…` (the head gets the odd column); the text itself when it
    fits. Measured as a whole, so a combining mark next to the cut cannot push it past `width`."""
    if text_width(text) <= width:
        return text
    room = max(width - 1, 1)
    while True:
        head = _take(text, (room + 1) // 2)
        tail = _take(text[len(head) :][::-1], room - text_width(head), backwards=True)[::-1]
        cut = f"{head}{CUT}{tail}"
        if text_width(cut) <= max(width, 2) or room <= 1:
            return cut
        room -= 1


def _take(text: str, room: int, backwards: bool = False) -> str:
    """The longest start of `text` in `room` columns that does not part a letter from its combining marks (`text` is
    reversed when `backwards`: its marks come before their letter)."""
    from unicodedata import combining

    used = 0
    for index, char in enumerate(text):
        used += max(text_width(char), 0)
        if used > room:
            if backwards:
                while index > 0 and combining(text[index - 1]):
                    index -= 1
            else:
                while index > 0 and combining(text[index]):
                    index -= 1
            return text[:index]
    return text


def _line(parts: Sequence[str], widths: Sequence[int], colours: Sequence[Mapping[str, str] | None] | None = None) -> str:
    palettes = colours or [None] * len(parts)
    painted = (paint(part, palette.get(part)) if palette else part for part, palette in zip(parts, palettes, strict=True))
    return "".join(
        shown + " " * (width - text_width(part) + GAP) for shown, part, width in zip(painted, parts, widths, strict=True)
    ).rstrip()
