"""Lines that fit a terminal, wrapped after a path separator or at a space, and the width text takes on one.

`width` None means no limit (`--wide`, or output that is not a terminal): every function then returns its input.
"""

from __future__ import annotations

import re
from functools import cache

GAP = 2  # between columns, as tabulate's "simple" and "plain" styles
_NARROWEST = 8  # a wrapped line's later lines keep at least this many columns
PIECES = re.compile(r"[^/\\ ]*(?:[/\\]+| +|$)")  # a path segment with its separator, or a word with its spaces


# Printable ASCII and Latin-1, and the few other characters aoe-runner writes (… Δ × ≤ ≥ →): one column each
_ONE_COLUMN = "[ -~\u00a0-\u00ff\u0394\u03bc\u2026\u2192\u2264\u2265]"
# CJK ideographs (and extension A), Hangul syllables, fullwidth forms: two columns each, as wcwidth says of every one
# of them (tests/render/test_width.py checks each code point)
_TWO_COLUMNS = "[\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uff01-\uff60]"


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The characters text_width knows, and those of them that take two columns: compiled when text that is not
    ASCII is first measured (their character sets cost 5 ms to compile)."""
    return re.compile(f"(?:{_ONE_COLUMN}|{_TWO_COLUMNS})*"), re.compile(_TWO_COLUMNS)


def text_width(text: str) -> int:
    """Columns on a terminal: a CJK character takes two. Text of _KNOWN characters, most of what is shown (Chinese
    names included), is measured without importing wcwidth (30 ms of start-up); wcwidth measures the rest."""
    if text.isascii() and text.isprintable():
        return len(text)
    known, wide = _patterns()
    if known.fullmatch(text):
        return len(text) + len(wide.findall(text))
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
