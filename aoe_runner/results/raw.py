"""Decode the bytes of a result file into its top-level entries, tolerating live and truncated files.

The fast path is one typed msgspec decode (`typed.py`) for the current training format; other
variants take one generic msgspec decode. The slow path, a stdlib decoder that walks the top-level
object one report at a time, runs only when that fails (a file cut off while AOE was writing it) or
when a top-level key is repeated (a dict keeps only the last of two; the decoders count the keys they
decode, typed.KeyCountingDecoder, so an escaped repetition is seen too). Bytes that
are not UTF-8 are read as U+FFFD, and lone surrogates kept as written, each with a note for the user.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Union

import msgspec

from aoe_runner.errors import InputError
from aoe_runner.results.text import (
    BOM,
    TOO_DEEP,
    decode_value,
    escaped,
    loads,
    lone_surrogates,
    may_hold_lone_surrogates,
    repaired_text,
    shortened,
    strict_text,
)
from aoe_runner.results.typed import KeyCountingDecoder, NotTyped, TopLevelKey, decode_typed

_GENERIC = KeyCountingDecoder(Union[dict[TopLevelKey, Any], list[Any]])  # noqa: UP007
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_OUTSIDE_STRINGS = re.compile(r"[0-9+\-.eEtruefalsn,: \t\n\r]*")  # a run of JSON's own characters between strings
_CLOSING = {"{": ord("}"), "[": ord("]")}
_LONGEST_ESCAPE = 12  # a surrogate pair, \ud83d\ude00: a bad \u escape this close to the end may be cut off
_SHOWN_KEY = 80  # characters of a cut-off report key named in a warning
DENSEST_BYTES = 8  # bytes per object or list, at least, in a file decoded into Python objects (refuse_dense)
_DENSE_FROM = 1 << 20  # smaller files are decoded whatever they hold: they cannot take much memory


@dataclass
class RawDocument:
    """Top-level entries of a result file: `(report key, value)` pairs, key None for the offline list form."""

    layout: Literal["training", "offline"]
    entries: list[tuple[str | None, Any]] = field(default_factory=list)
    partial: bool = False
    cut_off_report: str | None = None  # the key of the report that was being written when the file ends
    notes: list[str] = field(default_factory=list)  # what the user should know about how the bytes were read


def decode(data: bytes, where: str, *, typed: bool = True) -> RawDocument:
    """Decode one result file's bytes; raises InputError when they are not an AOE result file.

    `typed=False` skips the typed fast path (tests use it to check that both paths agree).
    """
    data = data.removeprefix(BOM)
    try:
        try:
            return _decode_utf8(data, where, typed)
        except UnicodeDecodeError:  # a byte that is not UTF-8, seen by msgspec or by the slow path
            return _decode_repaired(data, where, typed)
    except RecursionError:
        raise InputError(where, TOO_DEEP) from None


def _decode_utf8(data: bytes, where: str, typed: bool) -> RawDocument:
    generic_can_decode = True
    if typed:
        try:
            return RawDocument("training", decode_typed(data))
        except NotTyped as miss:
            generic_can_decode = miss.generic_can_decode
    refuse_dense(data, where)  # typed structs cost what AOE's records do; Python objects may cost far more
    if not generic_can_decode:  # a generic dict would fail the same way or drop a repeated key
        return _decode_slowly(data, where)
    try:
        doc, repeated = _decode_generic(data)
    except msgspec.DecodeError:
        return _decode_slowly(data, where)
    if isinstance(doc, dict):
        if repeated:  # the dict kept only the last value of a repeated key: the slow path keeps each
            return _decode_slowly(data, where)
        return RawDocument("training", list(doc.items()))
    if isinstance(doc, list):
        return RawDocument("offline", [(None, doc)])
    raise InputError(where, f"not an AOE result file: the top level is {_kind(doc)}, not an object or a list")


def refuse_dense(data: bytes | str, where: str) -> None:
    """Refuse, before decoding it into Python objects, a file that holds an object or list every few bytes: `{}` is
    2 bytes of JSON and 64 of Python, so such a file would take 25 to 30 times its size in memory. AOE's records
    take a hundred bytes or more for their three or four objects; small files are never refused."""
    if len(data) < _DENSE_FROM:
        return
    opening = (b"{", b"[") if isinstance(data, bytes) else ("{", "[")
    containers = data.count(opening[0]) + data.count(opening[1])  # type: ignore[arg-type]
    if containers * DENSEST_BYTES > len(data):
        raise InputError(
            where,
            f"not an AOE result file: {containers:,} objects and lists in {len(data):,} bytes, one every "
            f"{len(data) / containers:.1f} bytes (AOE's records take tens); not read",
        )


def _decode_generic(data: bytes) -> tuple[Any, bool]:
    """The document and whether a top-level key was repeated; raises msgspec.DecodeError as msgspec.json.decode."""
    try:
        return _GENERIC.decode(data)
    except msgspec.ValidationError:  # neither an object nor a list (the caller names it), or a number out of range
        return msgspec.json.decode(data), False


def _decode_repaired(data: bytes, where: str, typed: bool) -> RawDocument:
    """Read each invalid UTF-8 sequence as U+FFFD; when even then it is no result file, blame the encoding."""
    text, repair = repaired_text(data)
    try:
        document = _decode_utf8(text.encode(), where, typed)
    except InputError:
        if repair is None:  # only a character cut off at the end, which the slow path drops anyway
            raise
        raise InputError(where, f"not UTF-8 text (byte {repair.first_bad_byte})") from None
    if repair is not None:
        document.notes.insert(0, repair.describe())
    return document


def _decode_slowly(data: bytes, where: str) -> RawDocument:
    text = strict_text(data)
    document = _decode_incrementally(text, where)
    if may_hold_lone_surrogates(text):
        _note_lone_surrogates(document)
    return document


def _note_lone_surrogates(document: RawDocument) -> None:
    found = [string for _, string in lone_surrogates(document.entries)]
    if found:
        document.notes.append(
            f"{len(found)} string(s) hold a lone surrogate (a \\ud800-\\udfff escape without its pair), which is not"
            f' valid Unicode; kept as written (first: "{escaped(shortened(found[0], 60))}")'
        )


def _decode_incrementally(text: str, where: str) -> RawDocument:
    start = _skip_whitespace(text, 0)
    if start == len(text):
        return RawDocument("training", partial=True)
    opening = text[start]
    if opening == "[":
        return _decode_offline_list(text, start, where)
    if opening != "{":
        try:  # JSON that msgspec refused, as a number out of its range (1e400): name what it is
            kind = _kind(loads(text))  # an integer of any length too: msgspec refuses one over 64 bits
        except (json.JSONDecodeError, RecursionError):
            raise InputError(where, "not an AOE result file: it is not JSON (expected '{' or '[')") from None
        raise InputError(where, f"not an AOE result file: the top level is {kind}, not an object or a list")
    return _decode_report_object(text, start + 1, where)


def _decode_offline_list(text: str, start: int, where: str) -> RawDocument:
    try:
        value, end = decode_value(_DECODER, text, start)
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
        value, end = decode_value(_DECODER, text, pos)
    except json.JSONDecodeError as error:
        _require_truncation(text, pos, where, error)
        return None
    return key, value, end


def _cut_off(document: RawDocument, text: str, pos: int) -> RawDocument:
    document.partial = True
    document.cut_off_report = _key_at(text, pos)
    return document


def _key_at(text: str, pos: int) -> str | None:
    """The report key that starts at pos, shortened for a warning; its first characters when the text ends inside it."""
    if not text.startswith('"', pos):
        return None
    try:
        key = json.decoder.scanstring(text, pos + 1)[0]  # type: ignore[attr-defined]
    except json.JSONDecodeError:
        key = text[pos + 1 : pos + 2 + _SHOWN_KEY]
    return shortened(key, _SHOWN_KEY)


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
    JSON's own characters may appear. It must not still be complete at the end. Memory: one
    byte per open bracket, and the longest string.
    """
    expected = bytearray()  # the closing bracket of each open one
    pos, end = start, len(text)
    while True:
        pos = _OUTSIDE_STRINGS.match(text, pos).end()  # type: ignore[union-attr]
        if pos == end:
            return bool(expected)
        char = text[pos]
        if char == '"':
            try:
                string_end = _string_end(text, pos + 1)
            except json.JSONDecodeError:
                return False
            if string_end is None:
                return True
            pos = string_end
        elif char in _CLOSING:
            expected.append(_CLOSING[char])
            pos += 1
        elif char in "}]" and expected and expected.pop() == ord(char):
            pos += 1
        else:
            return False


def _string_end(text: str, pos: int) -> int | None:
    """The index after the closing quote of the string whose content starts at pos; None when the text ends inside it.

    Raises JSONDecodeError for a string that no more text could make valid (a bad escape).
    """
    try:
        return json.decoder.scanstring(text, pos, False)[1]  # type: ignore[attr-defined]
    except json.JSONDecodeError as error:
        if error.msg.startswith("Unterminated string"):
            return None
        if error.msg.startswith("Invalid \\uXXXX") and error.pos + _LONGEST_ESCAPE >= len(text):
            return None  # a \u escape cut off
        raise


def _skip_whitespace(text: str, pos: int) -> int:
    match = _WHITESPACE.match(text, pos)
    return match.end() if match else pos


def _syntax_error(where: str, text: str, pos: int, message: str) -> InputError:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return InputError(where, f"invalid JSON at line {line} column {column}: {message}")


def _kind(value: object) -> str:
    return {str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(type(value), "null")
