"""AOE and CANN error codes in a run's output: what kind of failure each is, what to try next, which check relates.

AOE reports its errors as codes (EG...), and the rest of CANN does too (EZ3003, EH9999, ...). The wording
here is ours; the classes are those of AOE.md §5. A code is searched for in the raw output, so a code split
across two chunks is still seen once per occurrence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from aoe_runner.runs.manifest import CodeSeen

_CODE = re.compile(rb"(?<![A-Za-z0-9])([EW][A-Z]\d{4,5})(?![A-Za-z0-9])")


# Each byte as its class (E or W, another capital, a digit, anything else): a code's shape is then found by
# bytes.find at C speed, and the regex, much slower per byte, runs only on output that has one.
def _shape_table() -> bytes:
    table = bytearray(b"." * 256)
    for byte in range(ord("A"), ord("Z") + 1):
        table[byte] = ord("A")
    for byte in b"EW":
        table[byte] = ord("E")
    for byte in b"0123456789":
        table[byte] = ord("0")
    return bytes(table)


_SHAPE = _shape_table()
_SHAPES = (b"EA0000", b"EE0000")
_TAIL = 512  # bytes kept from the previous chunk: a code cut at the boundary, and the start of its line
_LINE_LIMIT = 300


@dataclass(frozen=True)
class CodeClass:
    meaning: str
    next_step: str
    check: str | None  # the preflight check that looks at the same thing


_AOE_INPUT = CodeClass(
    "AOE refused its arguments, configuration, environment or options (EG0000-EG0004)",
    "check the mode and tuning options the script passes (aoe_mode / job_type), the aoe.ini values and the CANN "
    "environment (set_env.sh)",
    "aoe_mode",
)
CLASSES: dict[str, CodeClass] = {
    **{f"EG000{n}": _AOE_INPUT for n in range(5)},
    "EG0010": CodeClass(
        "AOE cannot use a directory", "check that TUNE_BANK_PATH and the work path exist and are writable", "bank_path"
    ),
    "EG0011": CodeClass("AOE cannot use a file", "check the permissions of the bank, the work path and aoe.ini", "bank_path"),
    "EG0012": CodeClass("an AOE component is missing or broken", "reinstall or re-source the CANN toolkit", "cann"),
    "EG0013": CodeClass(
        "AOE cannot use the device", "check ASCEND_DEVICE_ID, npu-smi info and that nobody else uses the device", "npu"
    ),
    "EG10000": CodeClass("AOE hit a network error", "check the network path AOE was given (shared bank, remote service)", None),
    "EG10001": CodeClass("AOE hit a certificate error", "check the certificates of the service AOE talks to", None),
    "WG0000": CodeClass(
        "AOE says memory is insufficient (a warning)", "lower TUNING_PARALLEL_NUM or free memory; see --model-memory", "memory"
    ),
    "EZ3003": CodeClass(
        "an operator package is not installed", "install the CANN operator package (kernels) for this SoC", "cann"
    ),
    "EH9999": CodeClass(
        "the runtime failed to start (often a SoC that does not match the installed CANN)",
        "compare the SocVersion in the log with npu-smi info and the CANN packages installed",
        "npu",
    ),
}
_OTHER = CodeClass("a CANN error code", "look the code up in the CANN error reference for this version", None)


class CodeScanner:
    """Feed it output chunks as they come; it keeps one CodeSeen per code, with the first line and a count."""

    def __init__(self) -> None:
        self._tail = b""
        self._resume = 0
        self._seen: dict[str, CodeSeen] = {}
        self.new: list[CodeSeen] = []  # codes seen for the first time since the caller last emptied this

    @property
    def seen(self) -> list[CodeSeen]:
        return list(self._seen.values())

    def feed(self, chunk: bytes) -> None:
        if not _may_hold_code(chunk) and not _may_hold_code(self._tail):  # most output: no capital E or W at all
            self._tail = (self._tail + chunk[-_TAIL:])[-_TAIL:]
            self._resume = 0  # no match can start in a tail without E or W
            return
        window = self._tail + chunk
        resume = self._resume  # matches before this index of the window were counted already
        shape = window.translate(_SHAPE)
        if not any(code_shape in shape for code_shape in _SHAPES):
            self._tail = window[-_TAIL:]
            self._resume = max(0, resume - (len(window) - len(self._tail)))
            return
        for match in _CODE.finditer(window, resume):
            if match.end() == len(window):
                break  # perhaps cut off (EG1000|0): seen whole with the next chunk
            self._count(match.group(1).decode("ascii"), window, match.start())
            resume = match.end()
        self._tail = window[-_TAIL:]
        self._resume = max(0, resume - (len(window) - len(self._tail)))

    def _count(self, code: str, window: bytes, at: int) -> None:
        if code in self._seen:
            self._seen[code].count += 1
            return
        known = CLASSES.get(code, _OTHER)
        seen = CodeSeen(
            code=code,
            meaning=known.meaning,
            next_step=known.next_step,
            preflight_check=known.check,
            first_line=_line_around(window, at),
            first_seen_at=datetime.now(timezone.utc),
            count=1,
        )
        self._seen[code] = seen
        self.new.append(seen)


def _may_hold_code(data: bytes) -> bool:
    """Whether data has an E or a W, with which every code starts: two memchr scans, far cheaper than the shape."""
    return b"E" in data or b"W" in data


def describe(seen: CodeSeen) -> str:
    """One line for the terminal: the code, its class, the next step and the related check."""
    check = f"; preflight check '{seen.preflight_check}' looks at this" if seen.preflight_check else ""
    return f"AOE/CANN code {seen.code}: {seen.meaning}; next: {seen.next_step}{check}"


def _line_around(window: bytes, at: int) -> str:
    start = window.rfind(b"\n", 0, at) + 1
    end = window.find(b"\n", at)
    line = window[start : end if end >= 0 else len(window)]
    return line.decode(errors="replace").strip()[:_LINE_LIMIT]
