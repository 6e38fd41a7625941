"""Bytes to text and text to JSON values, whatever the bytes hold: invalid UTF-8, lone surrogates, huge integers.

`report` and `validate` both read through here, so a file reads the same way in both. Nesting deeper
than the interpreter's recursion limit raises RecursionError; callers turn it into TOO_DEEP.
"""

from __future__ import annotations

import codecs
import json
import re
import reprlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

BOM = b"\xef\xbb\xbf"
TOO_DEEP = "nested too deeply to read (AOE result files nest about 8 levels)"
SURROGATE = re.compile("[\ud800-\udfff]")  # in decoded text, only a lone surrogate can fall in this range
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_REPLACEMENT = "\ufffd"
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 3, 60, 60, 60
JsonPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Utf8Repair:
    """Where a file stops being UTF-8, and how many byte sequences were read as U+FFFD."""

    first_bad_byte: int
    sequences: int

    def describe(self) -> str:
        return (
            f"not valid UTF-8 at byte {self.first_bad_byte} ({self.sequences} invalid sequence(s) read as U+FFFD;"
            " was the file written in another encoding?)"
        )


def strict_text(data: bytes) -> str:
    """UTF-8 text; a multi-byte character cut off by the end of the data (a file cut mid-write) is dropped.

    Raises UnicodeDecodeError for any other byte that is not UTF-8.
    """
    return codecs.getincrementaldecoder("utf-8")("strict").decode(data, final=False)


def repaired_text(data: bytes) -> tuple[str, Utf8Repair | None]:
    """UTF-8 text with every invalid sequence as U+FFFD, and what was replaced (None when nothing was)."""
    try:
        return strict_text(data), None
    except UnicodeDecodeError as error:
        first = error.start
    text: str = codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=False)
    replaced = text.count(_REPLACEMENT) - data.count(_REPLACEMENT.encode())
    return text, Utf8Repair(first, replaced) if replaced else None


def decode_value(decoder: json.JSONDecoder, text: str, pos: int) -> tuple[Any, int]:
    """`decoder.raw_decode`, reading an integer too long for `int` (over 4,300 digits) as a float, as msgspec does."""
    try:
        return decoder.raw_decode(text, pos)
    except json.JSONDecodeError:
        raise
    except ValueError:  # only int() raises a plain ValueError here: the max-str-digits limit
        return _WIDE_INT_DECODER.raw_decode(text, pos)


def loads(text: str) -> Any:
    """`json.loads` for a whole document, with integers of any length."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:
        return json.loads(text, parse_int=_int_or_float)


def _int_or_float(digits: str) -> int | float:
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    return float(digits) if limit and len(digits.lstrip("-")) > limit else int(digits)


_WIDE_INT_DECODER = json.JSONDecoder(parse_int=_int_or_float)


def may_hold_lone_surrogates(text: str) -> bool:
    """A cheap test on JSON text: False means no decoded string can hold a lone surrogate."""
    return _SURROGATE_ESCAPE.search(text) is not None


def lone_surrogates(value: Any) -> Iterator[tuple[JsonPath, str]]:
    """Every string (object keys included) holding a lone surrogate, with its path, in document order.

    Iterative, so any depth that decoded can be walked.
    """
    stack: list[tuple[JsonPath, Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if type(item) is str:
            if SURROGATE.search(item):
                yield path, item
        elif type(item) is dict:
            for key, member in reversed(item.items()):
                stack.append(((*path, key), member))
                stack.append(((*path, key), key))
        elif type(item) in (list, tuple):
            stack.extend(((*path, index), member) for index, member in reversed(list(enumerate(item))))


def escaped(text: str) -> str:
    """text with each lone surrogate written as its JSON escape, so that it can be encoded and printed."""
    return SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def short_text(value: object) -> str:
    """A value read from a file, as text: a string as it is, anything else as a repr bounded in depth and length."""
    return value if type(value) is str else _SHORT.repr(value)


def short_repr(value: object) -> str:
    """repr of a value read from a file, bounded in depth and length."""
    return _SHORT.repr(value)


def shortened(text: str, limit: int = 80) -> str:
    """text cut to `limit` characters, marked with "..." when cut: for names quoted in warnings."""
    return text if len(text) <= limit else text[:limit] + "..."
