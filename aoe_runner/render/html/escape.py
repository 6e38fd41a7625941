"""Untrusted text (names, paths, commands) as text in the three places a page holds it: HTML, plotly labels, JSON.

- HTML: safe_text.visible (control characters, bidi controls and lone surrogates as escapes), then html.escape.
- plotly labels (hover text, category ticks): plotly reads a small subset of HTML (`<b>`, `<br>`, `<a href>`) and
  entities in those strings, so a name is escaped as for HTML and plotly shows it as itself.
- JSON inside `<script>`: `<`, `>`, `&`, U+2028 and U+2029 as \\u escapes, so no `</script>` or `<!--` can end the
  script early; non-ASCII as \\u escapes too, so a lone surrogate is written and not refused by UTF-8.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

from aoe_runner.common.safe_text import visible

HOVER_LIMIT, HOVER_TAIL = 240, 40  # characters of a name in a hover label (start and end); the table holds it whole
_SCRIPT_UNSAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def text(value: object) -> str:
    """Any value as HTML text: never markup, never an invisible or reordering character."""
    return html.escape(visible(str(value)))


def label(value: str, limit: int | None = None, tail: int = 0) -> str:
    """A name for a plotly label: shown as itself, since plotly reads tags and entities in labels; cut to limit
    characters (before escaping, so no entity is cut) with an ellipsis, keeping its last tail characters."""
    shown = visible(value)
    if limit is not None and len(shown) > limit:
        shown = shown[: limit - 1 - tail] + "…" + shown[len(shown) - tail :]
    return html.escape(shown, quote=False)


def cell(value: str | None) -> str | None:
    """A name for a table cell (the page sets it as textContent): visible, nothing else needed."""
    return None if value is None else visible(value)


def script_json(data: Any) -> str:
    """JSON to put inside <script type="application/json">: nothing in it can close the element."""
    try:
        body = json.dumps(data, separators=(",", ":"), allow_nan=False)
    except ValueError:  # NaN or an infinity: JSON has none, and JSON.parse would refuse the page
        body = json.dumps(_finite(data), separators=(",", ":"), allow_nan=False)
    return body.translate(_SCRIPT_UNSAFE)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value
