"""Untrusted text (names, keys, paths, commands from result files and users) made safe to show in each text format.

- text (tables, terminal lines): control characters (C0, DEL, C1), the line and paragraph separators, the bidi
  controls (Trojan Source) and lone surrogates are shown as escapes: `\\x1b`, `\\n`, `\\u202e`, `\\ud800`. A name
  can then neither move the cursor, nor start a row or a line, nor reorder what is shown around it.
- markdown (GitHub tables and lists): the same, then backslash, pipe and backtick get a backslash, so does a `]` that
  would close a link (`](`, `][`, `]:`), and `& < >` become HTML entities: no cell break, code span, link, image or
  HTML from a name. A list item that starts with `# > + - * =` gets a backslash first, so it stays one plain item.
- csv: the same as text, then a cell that starts with `= + - @` gets a leading `'` (OWASP, CSV injection), unless
  it is a plain decimal number. Tab, CR and NUL, the other formula starters, are already escapes.
- JSON needs nothing here: its own escaping is exact (see json_format).

Printable text is returned as it is after one check, so rendering stays as cheap as before.
"""

from __future__ import annotations

import re
from functools import cache

_UNSAFE = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_MARKDOWN = re.compile(r"[\\|`<>&]|\](?=[(\[:])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_BLOCK_START = frozenset("#>+-*=")
_FORMULA_START = frozenset("=+-@")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def visible(text: str) -> str:
    """Text for a terminal or a table: every character that could act on the screen shown as an escape."""
    if text.isprintable():  # every character _UNSAFE matches is one Python calls unprintable (a test checks each)
        return text
    return _unsafe().sub(_escape, text)


@cache
def _unsafe() -> re.Pattern[str]:
    """Compiled on first use: its ranges up to U+DFFF cost every command's start-up 4.5 M instructions otherwise."""
    return re.compile(_UNSAFE)


def markdown(text: str, line_start: bool = False) -> str:
    """Text for a GitHub markdown table cell or, with line_start, a list item (where `#` or `>` would start a block)."""
    text = visible(text)
    if _MARKDOWN.search(text) is not None:
        text = _MARKDOWN.sub(_markdown_escape, text)
    if line_start and text[:1] in _BLOCK_START:
        text = "\\" + text
    return text


def csv_cell(text: str) -> str:
    """Text for a spreadsheet cell: visible, and never read as a formula."""
    text = visible(text)
    if text[:1] in _FORMULA_START and _PLAIN_NUMBER.fullmatch(text) is None:
        return "'" + text
    return text


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _SHORT.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def _markdown_escape(match: re.Match[str]) -> str:
    char = match.group()
    return _ENTITIES.get(char) or "\\" + char
