"""Sizes, durations and percentages as a user writes them, each with its unit.

A bare number is refused: `--model-memory 12` once meant 12 bytes and let the memory check pass, `--timeout 90`
could be read as minutes, `--threshold 0.05` as a fraction. The refusal says which units each takes.
"""

from __future__ import annotations

import math
import re

from aoe_runner.errors import UsageError

MAX_DURATION_S = 365 * 86400.0  # a year: more is a typo (or 400 nines, which float() makes infinite)
MAX_PERCENT = 1000.0
MAX_SIZE = 2**60  # an exbibyte: more is a typo
SIZE_UNITS = {
    "b": 1,
    **{unit: 1000**power for power, unit in enumerate(("kb", "mb", "gb", "tb", "pb"), start=1)},
    **{unit: 1000**power for power, unit in enumerate(("k", "m", "g", "t", "p"), start=1)},
    **{unit: 1024**power for power, unit in enumerate(("kib", "mib", "gib", "tib", "pib"), start=1)},
}
SIZE_HELP = "12GiB or 12GB; units B, KB, MB, GB, TB (also K, M, G, T), KiB, MiB, GiB, TiB"
DURATION_HELP = "90s, 30m, 2h, 1h30m, 500ms, 1d"
_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)"
# ASCII digits only (\d also matches '１' and '٣'); of the text lowercased: IGNORECASE costs a millisecond to compile
_SIZE = re.compile(rf"{_NUMBER}\s*([a-z]*)", re.ASCII)
_DURATION_PART = re.compile(rf"{_NUMBER}\s*(ms|s|m|h|d)?", re.ASCII)
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def ascii_digits(text: str) -> bool:
    """Is `text` one or more ASCII digits? str.isdigit() alone passes '１' (full width) and '²', which is no number."""
    return text.isascii() and text.isdigit()


def ascii_whole(text: str) -> int | None:
    """The whole number `text` writes in ASCII digits, with an optional sign and blanks around it, else None: int()
    also reads '１' (full width, a keystroke away in a Chinese input method), '٣' and '1_0', which AOE, in C++, does
    not read as those numbers, and str.isdigit() passes '²', which int() refuses."""
    stripped = text.strip()
    digits = stripped[1:] if stripped[:1] in ("+", "-") else stripped
    return int(stripped) if ascii_digits(digits) else None


def parse_size(text: str, option: str) -> int:
    """`12GiB` (binary), `12GB` or `12G` (decimal, as `df -H` and pydantic's ByteSize read them): bytes, more than
    zero."""
    match = _SIZE.fullmatch(text.strip().lower())
    if match is not None and not match.group(2):
        raise UsageError(f"{option}: {text!r} has no unit: write it with one ({SIZE_HELP})")
    if match is None or match.group(2).lower() not in SIZE_UNITS:
        raise UsageError(f"{option}: {text!r} is not a size ({SIZE_HELP})")
    from decimal import Decimal  # exact arithmetic for the one option given, not an import for every command

    amount = Decimal(match.group(1)) * SIZE_UNITS[match.group(2).lower()]
    if amount > MAX_SIZE:
        raise UsageError(f"{option}: {text!r} is more than 1 EiB")
    size = int(amount)
    if size <= 0:
        raise UsageError(f"{option}: {text!r} must be more than zero")
    return size


def parse_duration(text: str, option: str) -> float:
    """`90s`, `30m`, `2h`, `1h30m`, `500ms`, `1d`: seconds, more than zero, at most a year."""
    cleaned = text.strip().lower()
    parts = list(_DURATION_PART.finditer(cleaned))
    if not parts or "".join(part.group(0) for part in parts).replace(" ", "") != cleaned.replace(" ", ""):
        raise UsageError(f"{option}: {text!r} is not a duration ({DURATION_HELP})")
    if any(part.group(2) is None for part in parts):
        if re.fullmatch(_NUMBER, cleaned):
            raise UsageError(f"{option}: {text!r} has no unit: write it with one ({DURATION_HELP})")
        raise UsageError(f"{option}: {text!r} is not a duration ({DURATION_HELP})")
    seconds = sum(float(part.group(1)) * _SECONDS[part.group(2).lower()] for part in parts)
    if seconds <= 0:
        raise UsageError(f"{option}: {text!r} must be more than zero")
    if seconds > MAX_DURATION_S:
        raise UsageError(f"{option}: {text!r} is more than {format_duration(MAX_DURATION_S)}")
    return seconds


def optional_duration(text: str | None, option: str) -> float | None:
    """parse_duration of an option that may be left out."""
    return None if text is None else parse_duration(text, option)


def format_duration(seconds: float) -> str:
    """The inverse of parse_duration, shortest form: 5400 -> '1h30m', 0.5 -> '0.5s'."""
    if seconds < 60:
        return f"{seconds:g}s"
    whole = round(seconds)
    parts = [(whole // 86400, "d"), (whole % 86400 // 3600, "h"), (whole % 3600 // 60, "m"), (whole % 60, "s")]
    return "".join(f"{value}{unit}" for value, unit in parts if value)


def parse_percent(text: str, option: str) -> float:
    """`2%` or `2.5 %`: a percentage from 0 to 1000, both included; `0` alone is 0% too."""
    cleaned = text.strip()
    number = cleaned.removesuffix("%").strip()
    try:
        value = float(number)
    except ValueError:
        raise UsageError(f"{option}: {text!r} is not a percentage (for example 2%)") from None
    if not cleaned.endswith("%") and value != 0 and math.isfinite(value):
        raise UsageError(f"{option}: {text!r} has no unit: write a percentage with % (for example {number}%)")
    if not 0 <= value <= MAX_PERCENT:  # NaN fails too
        raise UsageError(f"{option}: {text!r} must be between 0% and {MAX_PERCENT:g}%")
    return value


def optional_percent(text: str | None, option: str) -> float | None:
    """parse_percent of an option that may be left out."""
    return None if text is None else parse_percent(text, option)
