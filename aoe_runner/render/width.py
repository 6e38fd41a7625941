"""Lines that fit a terminal, wrapped after a path separator or at a space, and the width text takes on one.

`width` None means no limit (`--wide`, or output that is not a terminal): every function then returns its input.
"""

from __future__ import annotations

import re

GAP = 2  # between columns, as tabulate's "simple" and "plain" styles
_NARROWEST = 8  # a wrapped line's later lines keep at least this many columns
PIECES = re.compile(r"[^/\\ ]*(?:[/\\]+| +|$)")  # a path segment with its separator, or a word with its spaces


# Printable ASCII and Latin-1, and the few other characters aoe-runner writes (… Δ × ≤ ≥ →): one column each
_ONE_COLUMN = re.compile("[ -~\u00a0-\u00ff\u0394\u03bc\u2026\u2192\u2264\u2265]*")


def text_width(text: str) -> int:
    """Columns on a terminal: a CJK character takes two. Text of _ONE_COLUMN's characters, most of what is shown, is
    measured without importing wcwidth (30 ms of start-up)."""
    if _ONE_COLUMN.fullmatch(text):
        return len(text)
    from wcwidth import wcswidth

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


def _cut(piece: str, room: int) -> int:
    """How many characters of piece fit in `room` columns (at least one, so wrapping always moves on)."""
    used = 0
    for index, char in enumerate(piece):
        used += max(text_width(char), 0)
        if used > room:
            return max(index, 1)
    return len(piece)
