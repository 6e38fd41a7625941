"""The fast path for the common result file: typed msgspec decodes of the document and of its records.

A current-format training file (an object of `report_*` lists of `basic`/`OPAT`/`SGAT` parts, operators
with `tune_performance`) decodes straight into the structs below, which skips building a dict for every
operator record; `report` decodes the records apart (`decode_document(raw_records=True)`, `decode_records`),
a batch at a time as it merges them. Anything else fails validation, and the caller falls back to the generic
decoder: this path never decides what a file means, it only hands the normaliser the same entries faster. Operator
records arrive as `TypedOperators`; every other section arrives as the plain dict the generic path gives.
"""

from __future__ import annotations

import threading
from typing import Any, Literal, Union

import msgspec
from msgspec import UNSET, UnsetType, field


class TypedPerformance(msgspec.Struct, gc=False):
    """One tuning mode's entry of an operator's `tune_performance` (gc=False, as TypedOperator: decoded JSON holds no
    reference cycles, so the collector need not track them, and they are cheaper to make and to free)."""

    before: float = field(name="performance_before_tune(us)")
    after: float = field(name="performance_after_tune(us)")
    improvement: Any = field(name="performance_improvement", default=None)
    # AOE writes only these (AOE.md section 4): decoded as the literals themselves, no string made per record;
    # another value sends the file down the generic path, which reads it as the normaliser always has
    update_mode: Union[Literal["add", "update"], None] = None  # noqa: UP007 (msgspec evaluates the annotation at run time)


class TypedOperator(msgspec.Struct, gc=False):
    op_name: str
    tune_performance: dict[str, TypedPerformance]
    op_type: Union[str, list[str], None] = None  # noqa: UP007


class TypedOperators(list):
    """The operator records of one OPAT section, already decoded into structs."""


class _Opat(msgspec.Struct):
    """An OPAT section: the keys the normaliser reads, each kept as decoded (UNSET when absent)."""

    operators: Union[list[TypedOperator], None, UnsetType] = field(name="repo_modified_operators", default=UNSET)  # noqa: UP007
    tuning_result: Any = field(name="opat_tuning_result", default=UNSET)
    tune_result: Any = field(name="opat_tune_result", default=UNSET)
    tuning_failed: Any = field(name="tuning_failed_operators", default=UNSET)
    tune_failed: Any = field(name="tune_failed_operators", default=UNSET)
    baseline: Any = field(name="model_baseline_performance(ms)", default=UNSET)
    result: Any = field(name="model_result_performance(ms)", default=UNSET)
    improvement: Any = field(name="model_performance_improvement", default=UNSET)
    repo_summary: Any = UNSET


class _Part(msgspec.Struct, forbid_unknown_fields=True):
    """One element of a report's list; unknown section names send the file down the generic path, and so does a part
    with no section at all (`{}`: AOE writes none, and a file of them would cost 20 times its size in structs)."""

    basic: Any = UNSET
    OPAT: Union[_Opat, None, UnsetType] = UNSET  # noqa: UP007
    SGAT: Any = UNSET

    def __post_init__(self) -> None:
        if self.basic is UNSET and self.OPAT is UNSET and self.SGAT is UNSET:
            raise ValueError("a part with no section")


class _RawOpat(_Opat):
    """An OPAT section whose operator records stay raw JSON until decode_records (report decodes them in batches)."""

    operators: Union[list[msgspec.Raw], None, UnsetType] = field(name="repo_modified_operators", default=UNSET)  # type: ignore[assignment]  # noqa: UP007


class _RawPart(_Part, forbid_unknown_fields=True):
    OPAT: Union[_RawOpat, None, UnsetType] = UNSET  # noqa: UP007


class TopLevelKey(str):
    """A key of the top-level object as KeyCountingDecoder decodes it (msgspec makes each one through the hook)."""


class _KeysDecoded(threading.local):
    count = 0  # top-level keys decoded in this thread by the current KeyCountingDecoder.decode


_keys_decoded = _KeysDecoded()


def _count_key(kind: type, key: str) -> TopLevelKey:
    _keys_decoded.count += 1
    return TopLevelKey(key)


class KeyCountingDecoder:
    """A msgspec JSON decoder for a type whose top-level object is keyed by TopLevelKey, which also tells whether a
    key was repeated: a dict keeps only the last value of a repeated key, so it then holds fewer keys than were
    decoded. Exact however the keys are written (an escape, `\\u0072eport_1`, is the same key as `report_1`). The
    hook counts every TopLevelKey it makes, so `shape` must use it once: as the key of its top-level dict."""

    def __init__(self, shape: Any) -> None:
        self._decoder = msgspec.json.Decoder(shape, dec_hook=_count_key)

    def decode(self, data: bytes) -> tuple[Any, bool]:
        """The document, its top-level keys plain str again, and whether a top-level key was repeated."""
        _keys_decoded.count = 0
        document = self._decoder.decode(data)
        if not isinstance(document, dict):
            return document, False
        return {str(key): value for key, value in document.items()}, _keys_decoded.count != len(document)


_DOCUMENT = KeyCountingDecoder(dict[TopLevelKey, list[_Part]])
_RAW_RECORDS_DOCUMENT = KeyCountingDecoder(dict[TopLevelKey, list[_RawPart]])
_RECORDS = msgspec.json.Decoder(list[TypedOperator])
_OPAT_KEYS = tuple((f.name, f.encode_name) for f in msgspec.structs.fields(_Opat))


class NotTyped(Exception):
    """The bytes are not a plain current-format training file; decode them another way."""

    def __init__(self, generic_can_decode: bool) -> None:
        super().__init__()
        self.generic_can_decode = generic_can_decode  # False: the JSON is cut off or malformed, or keys repeat


TypedDocument = dict[str, list[_Part]]


def decode_typed(data: bytes) -> list[tuple[str | None, Any]]:
    """Top-level `(report key, parts)` entries, with each OPAT's operators as TypedOperators.

    Raises NotTyped for anything the generic path must handle: other layouts and variants, truncated
    or invalid JSON, and repeated report keys (a dict would keep only the last of two).
    """
    return [(key, [_part_dict(part) for part in parts]) for key, parts in decode_document(data).items()]


def decode_document(data: bytes, raw_records: bool = False) -> TypedDocument:
    """The document as decoded structs, with each OPAT's operator records as msgspec.Raw when `raw_records` (checked
    as JSON only: decode_records decodes them); raises NotTyped as decode_typed does."""
    try:
        document, repeated = (_RAW_RECORDS_DOCUMENT if raw_records else _DOCUMENT).decode(data)
    except msgspec.ValidationError:
        raise NotTyped(generic_can_decode=True) from None
    except msgspec.DecodeError:
        raise NotTyped(generic_can_decode=False) from None
    if repeated:
        raise NotTyped(generic_can_decode=False)
    return document


def decode_records(raws: list[msgspec.Raw]) -> list[TypedOperator]:
    """Operator records left raw by decode_document, as the structs it would have made; raises msgspec.ValidationError
    for one it would have refused."""
    return _RECORDS.decode(b"".join((b"[", b",".join(raws), b"]")))


def without_operators(document: TypedDocument) -> list[tuple[str | None, Any]]:
    """decode_typed's entries with every OPAT's operator list empty: the rest of each report, for the normaliser."""
    return [(key, [_part_dict(part, operators=False) for part in parts]) for key, parts in document.items()]


def report_operators(parts: list[_Part]) -> list[TypedOperator]:
    """The operator records of one report's parts, as the normaliser sees them (a later OPAT part replaces an earlier)."""
    found: list[TypedOperator] = []
    for part in parts:
        if part.OPAT is not UNSET:
            operators = None if part.OPAT is None else part.OPAT.operators
            found = operators if isinstance(operators, list) else []
    return found


def _part_dict(part: _Part, operators: bool = True) -> dict[str, Any]:
    section: dict[str, Any] = {}
    if part.basic is not UNSET:
        section["basic"] = part.basic
    if part.OPAT is not UNSET:
        section["OPAT"] = None if part.OPAT is None else _opat_dict(part.OPAT, operators)
    if part.SGAT is not UNSET:
        section["SGAT"] = part.SGAT
    return section


def _opat_dict(opat: _Opat, operators: bool) -> dict[str, Any]:
    section = {}
    for attribute, key in _OPAT_KEYS:
        value = getattr(opat, attribute)
        if value is not UNSET:
            section[key] = value
    if isinstance(opat.operators, list):
        section["repo_modified_operators"] = TypedOperators(opat.operators if operators else ())
    return section
