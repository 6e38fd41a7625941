"""Decode the bytes of a result file into its top-level entries, tolerating live and truncated files.

The fast path is one typed msgspec decode (`typed.py`) for the current training format; other
variants take one generic msgspec decode. The slow path, a stdlib decoder that walks the top-level
object one report at a time, runs only when that fails (a file cut off while AOE was writing it) or
when a report key may be repeated (a dict would keep only the last of two identical keys).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from aoe_runner.errors import InputError
from aoe_runner.results.typed import NotTyped, decode_typed

_BOM = b"\xef\xbb\xbf"
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_PARTIAL_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"')
_OUTSIDE_STRING = frozenset("{}[],:0123456789+-.eE truefalsn\t\n\r")


@dataclass
class RawDocument:
    """Top-level entries of a result file: `(report key, value)` pairs, key None for the offline list form."""

    layout: Literal["training", "offline"]
    entries: list[tuple[str | None, Any]] = field(default_factory=list)
    partial: bool = False
    cut_off_report: str | None = None  # the key of the report that was being written when the file ends


def decode(data: bytes, where: str, *, typed: bool = True) -> RawDocument:
    """Decode one result file's bytes; raises InputError when they are not an AOE result file.

    `typed=False` skips the typed fast path (tests use it to check that both paths agree).
    """
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if typed:
        try:
            return RawDocument("training", decode_typed(data))
        except NotTyped as miss:
            if not miss.generic_can_decode:  # a generic dict would fail the same way or drop a repeated key
                return _decode_incrementally(_text_of(data, where), where)
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return _decode_incrementally(_text_of(data, where), where)
    if isinstance(doc, dict):
        if data.count(b'"report_') > len(doc):  # a repeated key would have been dropped
            return _decode_incrementally(_text_of(data, where), where)
        return RawDocument("training", list(doc.items()))
    if isinstance(doc, list):
        return RawDocument("offline", [(None, doc)])
    raise InputError(where, f"not an AOE result file: the top level is {_kind(doc)}, not an object or a list")


def _text_of(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.reason == "unexpected end of data":  # cut off inside a multi-byte character
            return data[: error.start].decode("utf-8", errors="strict")
        raise InputError(where, f"not UTF-8 text (byte {error.start})") from None


def _decode_incrementally(text: str, where: str) -> RawDocument:
    start = _skip_whitespace(text, 0)
    if start == len(text):
        return RawDocument("training", partial=True)
    opening = text[start]
    if opening == "[":
        return _decode_offline_list(text, start, where)
    if opening != "{":
        raise InputError(where, "not an AOE result file: it is not JSON (expected '{' or '[')")
    return _decode_report_object(text, start + 1, where)


def _decode_offline_list(text: str, start: int, where: str) -> RawDocument:
    try:
        value, end = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as error:
        _require_truncation(text, start, where, error)
        return RawDocument("offline", partial=True, cut_off_report="the offline report")
    _require_only_whitespace_after(text, end, where)
    return RawDocument("offline", [(None, value)])


def _decode_report_object(text: str, pos: int, where: str) -> RawDocument:
    document = RawDocument("training")
    while True:
        pos = _skip_whitespace(text, pos)
        if pos == len(text):
            return _cut_off(document, text, pos)
        if text[pos] == "}":
            _require_only_whitespace_after(text, pos + 1, where)
            return document
        if document.entries:
            if text[pos] != ",":
                raise _syntax_error(where, text, pos, "expected ',' or '}' between reports")
            pos = _skip_whitespace(text, pos + 1)
        parsed = _decode_member(text, pos, where)
        if parsed is None:
            return _cut_off(document, text, pos)
        key, value, pos = parsed
        document.entries.append((key, value))


def _decode_member(text: str, pos: int, where: str) -> tuple[str, Any, int] | None:
    """Decode `"key": value` at pos; None when the text ends inside it."""
    if pos == len(text):
        return None
    if text[pos] != '"':
        raise _syntax_error(where, text, pos, "expected a report key")
    try:
        key, pos = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]
    except json.JSONDecodeError as error:
        _require_truncation(text, pos, where, error)
        return None
    pos = _skip_whitespace(text, pos)
    if pos == len(text):
        return None
    if text[pos] != ":":
        raise _syntax_error(where, text, pos, "expected ':' after a report key")
    pos = _skip_whitespace(text, pos + 1)
    if pos == len(text):
        return None
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as error:
        _require_truncation(text, pos, where, error)
        return None
    return key, value, end


def _cut_off(document: RawDocument, text: str, pos: int) -> RawDocument:
    document.partial = True
    key = _PARTIAL_KEY.match(text, pos)
    document.cut_off_report = key.group(1) if key else None
    return document


def _require_truncation(text: str, start: int, where: str, error: json.JSONDecodeError) -> None:
    """Accept a decode failure only when the rest of the file is a prefix of some valid JSON."""
    if not is_json_prefix(text, start):
        raise _syntax_error(where, text, error.pos, error.msg)


def _require_only_whitespace_after(text: str, pos: int, where: str) -> None:
    pos = _skip_whitespace(text, pos)
    if pos != len(text):
        raise _syntax_error(where, text, pos, "unexpected text after the end of the JSON document")


def is_json_prefix(text: str, start: int = 0) -> bool:
    """Could text[start:] be the beginning of a JSON value that was cut off?

    A light scan: brackets must nest, strings must be well formed, and outside strings only
    JSON's own characters may appear. It must not still be complete at the end.
    """
    stack: list[str] = []
    in_string = escaped = False
    for char in text[start:]:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]":
            if not stack or stack.pop() != char:
                return False
        elif char not in _OUTSIDE_STRING:
            return False
    return in_string or bool(stack)


def _skip_whitespace(text: str, pos: int) -> int:
    match = _WHITESPACE.match(text, pos)
    return match.end() if match else pos


def _syntax_error(where: str, text: str, pos: int, message: str) -> InputError:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return InputError(where, f"invalid JSON at line {line} column {column}: {message}")


def _kind(value: object) -> str:
    return {str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(type(value), "null")
