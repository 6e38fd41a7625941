"""Loading a file takes memory within a small multiple of its size, whatever it holds and wherever it was cut.

Each case writes a 10 MiB file and loads it in a fresh interpreter, which reports how much its peak RSS (VmHWM:
ru_maxrss would carry the parent's peak across exec) grew while loading. A regex over an unterminated report key
once took 1.4 GB for 10 MB. Files with an object or list every few bytes are refused before the generic decoder,
but Python's objects still cost up to 26 times the JSON of other shapes AOE never writes (issue 42, finding 8).
AOE's own shapes stay within LIMIT, any shape within ANY_SHAPE_LIMIT (docs/reference.md states both).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter per 10 MiB file shape, measuring its peak memory

SIZE = 10 * 2**20
LIMIT = 8  # peak RSS growth, in file sizes: the bytes, their text, and the decoded reports that were complete
ANY_SHAPE_LIMIT = 30  # for shapes AOE never writes (26x measured here: a dict per `{"a":"bc"}`, per `{}` in `basic`)
_HEAD = b'{"report_20260101000000000_1": [{"basic": {"tuning_name": "a", "tuning_time(s)": 1}}], '
_PROBE = """
import re, sys
from aoe_runner.errors import InputError
from aoe_runner.results.loader import load_result_file

def peak_rss():
    with open("/proc/self/status") as status:
        return int(re.search(r"VmHWM:\\s*(\\d+) kB", status.read()).group(1)) * 1024

before = peak_rss()
try:
    load_result_file(sys.argv[1])
except InputError:
    pass
print(peak_rss() - before)
"""


def _padded(head: bytes, unit: bytes) -> bytes:
    return head + unit * ((SIZE - len(head)) // len(unit))


def _operators() -> bytes:
    """Compact operator records, as AOE writes them, cut between two of them."""
    record = (
        '{"op_name": "model/layer_%d/MatMulV2_%d", "op_type": "MatMulV2", "tune_performance": {"Schedule": {'
        '"performance_after_tune(us)": %.3f, "performance_before_tune(us)": %.3f, "performance_improvement": "30.00%%",'
        ' "update_mode": "add"}}}'
    )
    records = ", ".join(record % (i % 48, i, 100 + i % 500, 130 + i % 650) for i in range(60_000)).encode()
    return (_HEAD + b'"report_20260101000000000_2": [{"OPAT": {"repo_modified_operators": [' + records)[:SIZE]


CUT_OFF_FILES: dict[str, Callable[[], bytes]] = {
    "inside a report key": lambda: _padded(_HEAD + b'"report_', b"x"),
    "inside a report key of escapes": lambda: _padded(_HEAD + b'"report_', b'\\"'),
    "inside a string value": lambda: _padded(_HEAD + b'"report_2": [{"basic": {"tuning_name": "', b"x"),
    "inside a string of \\u escapes": lambda: _padded(_HEAD + b'"report_2": [{"basic": {"tuning_name": "', b"\\u00e9"),
    "inside open brackets": lambda: _padded(_HEAD + b'"report_2": ', b"["),
    "between operator records": _operators,
}
_LIST = _HEAD + b'"report_2": ['
OTHER_SHAPES: dict[str, Callable[[], bytes]] = {
    "a cut list of {}": lambda: _padded(_LIST, b"{},"),
    "a cut list of []": lambda: _padded(_LIST, b"[],"),
    'a cut list of {"a":{}}': lambda: _padded(_LIST, b'{"a":{}},'),
    'a whole list of {"a":{}}': lambda: _padded(_LIST, b'{"a":{}},')[:-1] + b"]}",
    "a million empty reports": lambda: (_HEAD + b"".join(b'"report_%07d": [],' % i for i in range(600_000)))[:SIZE],
    "a list of 2-character strings": lambda: _padded(_LIST, b'"ab",')[:-1] + b"]}",
    "a list of floats": lambda: _padded(_LIST, b"1.5,")[:-1] + b"]}",
    "a basic section holding a list of {}": lambda: _padded(_HEAD + b'"report_2": [{"basic": [', b"{},")[:-1] + b"]}]}",
    "a million top-level keys": lambda: b"{" + b"".join(b'"%x":[],' % i for i in range(SIZE // 10))[: SIZE - 10] + b'"e":[]}',
    'a cut list of {"a":"bc"}': lambda: _padded(_LIST, b'{"a":"bc"},'),
}


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak RSS is read from /proc (Linux)")
@pytest.mark.parametrize("shape", [*CUT_OFF_FILES, *OTHER_SHAPES])
def test_peak_memory_of_a_file_is_a_small_multiple_of_its_size(tmp_path: Path, shape: str) -> None:
    path = tmp_path / "aoe_result_opat_20260101000000000_1.json"
    path.write_bytes({**CUT_OFF_FILES, **OTHER_SHAPES}[shape]())
    limit = LIMIT if shape in CUT_OFF_FILES else ANY_SHAPE_LIMIT
    probe = subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    growth = int(probe.stdout)
    assert growth <= limit * path.stat().st_size, f"{growth / 2**20:.0f} MiB for a {path.stat().st_size / 2**20:.0f} MiB file"
