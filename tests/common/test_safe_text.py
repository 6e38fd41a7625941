"""safe_text.visible returns printable text untouched without compiling its pattern: that shortcut is exact only if
every character the pattern escapes is one Python calls unprintable."""

from __future__ import annotations

import re
import sys

from aoe_runner.common import safe_text


def test_every_escaped_character_is_unprintable() -> None:
    unsafe = re.compile(safe_text._UNSAFE)
    escaped = [point for point in range(sys.maxunicode + 1) if unsafe.match(chr(point))]
    assert len(escaped) > 2000  # C0, DEL, C1, the bidi controls and the surrogates
    assert [hex(point) for point in escaped if chr(point).isprintable()] == []


def test_shown_as_escapes() -> None:
    assert safe_text.visible("卷积 µs …") == "卷积 µs …"
    assert safe_text.visible("a\x1b[2Jb\u202ec\ud800\n") == "a\\x1b[2Jb\\u202ec\\ud800\\n"
