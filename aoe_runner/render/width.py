"""Lines that fit a terminal, wrapped after a path separator or at a space, and the width text takes on one.

`width` None means no limit (`--wide`, or output that is not a terminal): every function then returns its input.
"""

from __future__ import annotations

import re

GAP = 2  # between columns, as tabulate's "simple" and "plain" styles
_NARROWEST = 8  # a wrapped line's later lines keep at least this many columns
PIECES = re.compile(r"[^/\\ ]*(?:[/\\]+| +|$)")  # a path segment with its separator, or a word with its spaces


_OTHER_ONE_COLUMN = frozenset("\u0394\u03bc\u2026\u2192\u2264\u2265")  # Δ μ … → ≤ ≥: written by aoe-runner


def text_width(text: str) -> int:
    """Columns on a terminal: a CJK character takes two. Text of characters _known_width knows, most of what is
    shown (Chinese names included), is measured without importing wcwidth (30 ms of start-up); wcwidth measures the
    rest."""
    if text.isascii() and text.isprintable():
        return len(text)
    known = _known_width(text)
    if known is not None:
        return known
    from wcwidth import wcswidth

    measured = wcswidth(text)
    return measured if measured >= 0 else len(text)


def _known_width(text: str) -> int | None:
    """Printable ASCII and Latin-1 and the symbols aoe-runner writes take one column; CJK ideographs (and extension
    A), Hangul syllables and fullwidth forms two, as wcwidth says of every one of them (tests/render/test_width.py
    checks each code point); None for text holding any other character. Comparisons, not a regular expression:
    compiling these character ranges costs 20 M instructions, more than a report's own work."""
    columns = 0
    for char in text:
        if " " <= char <= "~" or "\xa0" <= char <= "\xff" or char in _OTHER_ONE_COLUMN:
            columns += 1
        elif (
            "\u4e00" <= char <= "\u9fff"
            or "\u3400" <= char <= "\u4dbf"
            or "\uac00" <= char <= "\ud7a3"
            or "\uff01" <= char <= "\uff60"
        ):
            columns += 2
        else:
            return None
    return columns


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
