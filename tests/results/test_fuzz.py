"""Byte-mutation fuzzing of every fixture: `report` (every format, and --diff) and `validate` never exit 3.

Each example mutates one fixture (sample_results/ and tests/data/) a few times: truncation, byte flips,
inserted, deleted and repeated ranges, hostile tokens (bytes that are not UTF-8, lone surrogates, huge
integers, deep nesting) put in place of a JSON value, and generated values of any type put in place of a
node (type confusion). The mutated file is reported next to an untouched
one through `aoe_runner.cli.main.main`, the real crash boundary, into streams that encode as a UTF-8 terminal
does. Whatever the bytes, the answer is a result, warnings, or one exit-4 line naming the file, and the
untouched file is still reported.

The default run is bounded (FAST_EXAMPLES); the long run is `python -m pytest -m fuzz tests/results/test_fuzz.py`,
with AOE_FUZZ_EXAMPLES examples (default 3,000: about 10 minutes on 2 CPUs).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aoe_runner.cli.main import main
from aoe_runner.errors import ExitCode
from tests.conftest import DATA, SAMPLES

FIXTURES = sorted([*SAMPLES.rglob("*.json"), *DATA.rglob("*.json")])
UNTOUCHED = SAMPLES / "cann60" / "aoe_result_opat_20220815_093012345_23001.json"
UNTOUCHED_OPERATOR = "resnet_model/dense/MatMul"
FAST_EXAMPLES = 40
LONG_EXAMPLES = int(os.environ.get("AOE_FUZZ_EXAMPLES", "3000"))
FORMATS = ("json", "table", "csv", "markdown")
TOKENS = (
    *(b"\xe9", b"\xd7\xd3", b"\xff", b"\xc3", b"\x00", b"\xef\xbb\xbf", b"\xff\xfe"),
    *(b'"\\ud800"', b'"x\\udc00y"', b'"\\ud83d\\ude00"', b'"\\u0000"', b'"\\ud800', b"\\u12"),
    *(b"1" + b"0" * 309, b"9" * 4400, b"-" + b"9" * 4400, b"-1", b"0", b"-0.0", b"1e400", b"-1e400", b"1e-320"),
    *(b"1.7e308", b"-1.7e308", b"1e-300", b"9007199254740993", b"NaN", b"Infinity", b"-Infinity", b"1.5", b'"12.5"', b'"0"'),
    *(b"[" * 1100, b"]" * 1100, b'{"a":' * 1100, b"[" * 960 + b"]" * 960, b"[[[[[[[[", b"]]]]]]"),
    *(b"[]", b"{}", b"null", b"true", b'""', b'"', b"\\", b",", b":", b"}", b"]", b"{", b"["),
    *(b'"report_', b'"report_20260101000000000_' + b"7" * 5000 + b'"', b'"report_20260230256099999_1"'),
    *(b'"tuning failed"', b'"tuning incomplete"', b'"update"', b'["Add", ["Relu"]]', b'{"add_repo_operators": [1]}'),
    *(b'"\\r\\n\\u001b[2J"', b"\"=cmd|' /C calc'!A0\"", b'"|<script>"', b"\r", b"\n", b"\t"),
)
_SCALAR = re.compile(rb'"(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*|true|false|null')
_KEYS = (
    *("basic", "OPAT", "SGAT", "tuning_name", "tuning_time(s)", "opat_tuning_result", "opat_tune_result", "op_name"),
    *("op_type", "tune_performance", "Format", "Schedule", "performance_before_tune(us)", "performance_after_tune(us)"),
    *("performance_improvement", "update_mode", "repo_modified_operators", "add_repo_operators", "repo_summary"),
    *("total_num", "repo_hit_num", "tuning_failed_operators", "model_baseline_performance(ms)", "repo_key"),
    *("model_result_performance(ms)", "repo_modified_subgraphs", "add_repo_subgraphs", "performance_before_tune(ms)"),
)
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.sampled_from(_KEYS),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def mutated_fixtures(draw: st.DrawFn) -> bytes:
    data = draw(st.sampled_from(FIXTURES)).read_bytes()
    for _ in range(draw(st.integers(1, 4))):
        data = _mutate(draw, data)
    return data


def _mutate(draw: st.DrawFn, data: bytes) -> bytes:
    at = draw(st.integers(0, len(data)))
    kind = draw(st.sampled_from(["node", "node", "value", "value", "insert", "flip", "delete", "repeat", "truncate"]))
    if kind == "node":
        return _replace_node(draw, data)
    if kind == "value":
        return _replace_value(data, draw(st.integers(0, 10_000)), draw(_tokens()))
    if kind == "insert":
        return data[:at] + draw(_tokens()) + data[at:]
    if kind == "flip":
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    if kind == "delete":
        return data[:at] + data[at + draw(st.integers(1, 64)) :]
    if kind == "repeat":
        return data[:at] + data[at : at + draw(st.integers(1, 400))] * draw(st.integers(2, 40)) + data[at:]
    return data[:at]


def _tokens() -> st.SearchStrategy[bytes]:
    return st.one_of(st.sampled_from(TOKENS), st.binary(min_size=1, max_size=8))


def _replace_node(draw: st.DrawFn, data: bytes) -> bytes:
    """Put a generated JSON value (of any type) in place of one node of the document, when it is JSON."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):  # not JSON (any more), or deeper than json can go
        return _replace_value(data, draw(st.integers(0, 10_000)), draw(_tokens()))
    nodes = [document]
    while isinstance(nodes[-1], (dict, list)) and nodes[-1] and draw(st.integers(0, 5)):
        children = list(nodes[-1].values() if isinstance(nodes[-1], dict) else nodes[-1])
        nodes.append(children[draw(st.integers(0, len(children) - 1))])
    parent, node = (nodes[-2], nodes[-1]) if len(nodes) > 1 else (None, document)
    if parent is None:
        return json.dumps(draw(_JSON_VALUES)).encode()
    replacement = draw(_JSON_VALUES)
    if isinstance(parent, dict):
        parent[next(key for key, value in parent.items() if value is node)] = replacement
    else:
        parent[next(index for index, value in enumerate(parent) if value is node)] = replacement
    try:
        return json.dumps(document, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    except RecursionError:
        return data


def _replace_value(data: bytes, index: int, token: bytes) -> bytes:
    """Put token in place of one JSON string, number or literal (an object key is a string too)."""
    values = list(_SCALAR.finditer(data))
    if not values:
        return data + token
    value = values[index % len(values)]
    return data[: value.start()] + token + data[value.end() :]


def _run(*argv: str) -> tuple[int, str, str]:
    """main(argv) writing to a stdout and a stderr that encode as a UTF-8 terminal's do."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", newline="", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", newline="", write_through=True)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.buffer.getvalue().decode(), err.buffer.getvalue().decode()  # type: ignore[attr-defined]


def _crash_details(err: str) -> str:
    log = re.search(r"crash log: (\S+);", err)
    return Path(log.group(1)).read_text() if log else err


def _check_report(path: Path, output_format: str, *options: str) -> None:
    code, out, err = _run("report", "--format", output_format, "--top", "100000", *options, str(path), str(UNTOUCHED))
    assert code != ExitCode.INTERNAL, _crash_details(err)
    assert code in (ExitCode.OK, ExitCode.BAD_INPUT), err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == (code == ExitCode.BAD_INPUT), err
    assert all(line.startswith(f"error: {path}: ") for line in errors), err
    if "--diff" not in options and (code == ExitCode.OK or output_format != "json"):
        assert UNTOUCHED_OPERATOR in out  # the untouched file is still reported
    if output_format == "json":
        json.loads(out)


def _check_validate(path: Path) -> None:
    code, _, err = _run("validate", str(path))
    assert code != ExitCode.INTERNAL, _crash_details(err)
    assert code in (ExitCode.OK, ExitCode.FINDING, ExitCode.BAD_INPUT), err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == (code == ExitCode.BAD_INPUT), err
    assert all(line.startswith(f"error: {path}: ") for line in errors), err


def _never_an_internal_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "aoe_result_opat_20260101000000000_1.json"
        path.write_bytes(data)
        for output_format in FORMATS:
            _check_report(path, output_format)
        _check_report(path, "table", "--diff")
        _check_validate(path)


@settings(max_examples=FAST_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=mutated_fixtures())
def test_mutated_fixtures_never_give_an_internal_error(data: bytes) -> None:
    _never_an_internal_error(data)


@pytest.mark.fuzz
@settings(max_examples=LONG_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=mutated_fixtures())
def test_mutated_fixtures_never_give_an_internal_error_long_run(data: bytes) -> None:
    _never_an_internal_error(data)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_fixture_as_it_is_never_gives_an_internal_error(path: Path) -> None:
    _never_an_internal_error(path.read_bytes())
