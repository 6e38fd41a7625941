"""Numbers as precise as the inputs they came from: no float noise (58.62999999999997) in machine-readable output."""

from __future__ import annotations

import math


def decimals(value: float) -> int:
    """Digits after the point in the shortest text of value: 310.4 -> 1, 251.77 -> 2, 142.0 -> 0."""
    return max(-_shortest(value)[1], 0)


def significant(value: float) -> int:
    """Significant digits in the shortest text of value: 310.4 -> 4, 0.05 -> 1, 142.0 -> 3."""
    return max(len(_shortest(value)[0]), 1)


def _shortest(value: float) -> tuple[str, int]:
    """The digits of repr(value) without leading or trailing zeros, and the power of ten of the last one:
    310.4 -> ("3104", -1), 1.5e-07 -> ("15", -8), 1200.0 -> ("12", 2); 0, inf and nan -> ("", 0)."""
    if value == 0 or not math.isfinite(value):
        return "", 0
    mantissa, _, power = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    kept = digits.rstrip("0")
    return kept, int(power or 0) - len(fraction) + len(digits) - len(kept)


def difference(result: float | None, *inputs: float | None) -> float | None:
    """A sum or difference of inputs, rounded to the most decimals among them."""
    if result is None or not math.isfinite(result):
        return result
    places = max((decimals(x) for x in inputs if x is not None and math.isfinite(x)), default=9)
    return round(result, min(places, 12))


def ratio(result: float | None, *inputs: float | None, at_least: int = 3) -> float | None:
    """A quotient (speed-up, percentage) of inputs, to as many significant digits as the least precise of them."""
    if result is None or not math.isfinite(result) or result == 0:
        return result
    digits = max(min((significant(x) for x in inputs if x is not None and math.isfinite(x)), default=6), at_least)
    return round(result, digits - 1 - math.floor(math.log10(abs(result))))


def figure(value: float, places: int) -> str:
    """A figure for people, as f"{value:,.{places}f}" writes it, but never a 300-digit integer part nor a value that is
    not zero written as 0: from 1e15 up, and below what `places` shows, it has three significant digits and an
    exponent (`1.8e+308`, `1e-06`); inf and nan as themselves."""
    if not math.isfinite(value) or abs(value) >= LONGEST_FIGURE:
        return f"{value:.3g}"
    shown = f"{value:,.{places}f}"
    if value != 0 and not any(digit in shown for digit in "123456789"):  # rounded to zero (0.5 to "0", half to even)
        return f"{value:.3g}"
    return shown


def quantity(value: float | None, places: int, unit: str) -> str:
    """A figure with its unit (`1,234.5 µs`), or "none" for a value that is missing."""
    return "none" if value is None else f"{figure(value, places)} {unit}"


LONGEST_FIGURE = 1e15  # page.js writes numbers from here on with an exponent too


def finite(value: float | None) -> float | None:
    """The value, or None for a NaN or an infinity (JSON has neither)."""
    return value if value is not None and math.isfinite(value) else None


def plain(value: float | None) -> str:
    """A figure as csv holds it (`12.5`, `1.90909`), empty when there is none."""
    return "" if value is None else f"{value:g}"


def times(value: float | None) -> str:
    """A ratio as text shows it (`1.374x`); csv and JSON hold the number."""
    return "-" if value is None else f"{value:.3f}x"


def microseconds(value: float | None) -> str:
    """A time in µs as text shows it, in the unit that keeps it short: `812 µs`, `1.24 ms`, `3.5 s`."""
    if value is None:
        return "-"
    for unit, scale in (("s", 1e6), ("ms", 1e3)):
        if abs(value) >= scale:
            return f"{figure(value / scale, 0)} {unit}" if abs(value) >= 1e3 * scale else f"{value / scale:.3g} {unit}"
    return f"{value:.3g} µs"


def local_time(timestamp: str) -> str:
    """A recorded ISO 8601 time as tables and csv show it: this host's local time, to the second. JSON keeps the ISO
    text as recorded."""
    from datetime import datetime

    return datetime.fromisoformat(timestamp).astimezone().strftime("%Y-%m-%d %H:%M:%S")
