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
    """Lines of at most `width` columns, broken after `/` or at a space, never inside a word or a name: a piece longer
    than a line gets a line of its own and runs past the edge, whole, so that it can still be copied."""
    if width is None or text_width(text) <= width:
        return [text]
    lines: list[str] = []
    line = ""
    for piece in (p for p in pieces.findall(text) if p):
        if line and text_width(line + piece.rstrip(" ")) > width:
            lines.append(line.rstrip(" "))
            line = ""
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
