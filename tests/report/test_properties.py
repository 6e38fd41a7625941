"""Hypothesis properties of the loader (truncation, hostile values) and of the merge (order independence)."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aoe_runner.common.jsontext import dump_json
from aoe_runner.errors import InputError
from aoe_runner.report.api import merge_files
from aoe_runner.report.summary_data import summary_of
from aoe_runner.results.loader import load_result_file
from aoe_runner.results.model import ResultFile
from aoe_runner.results.normalize import normalize
from aoe_runner.results.raw import decode
from tests.conftest import DATA, SAMPLES
from tests.report.oracle import summarize

SAMPLE_FILES = sorted(p for p in SAMPLES.rglob("*.json") if "live" not in p.parts)
ALL_FIXTURES = sorted([*SAMPLES.rglob("*.json"), *DATA.rglob("*.json")])
# Valid JSON values that once crashed the loader: bytes that are not UTF-8, lone surrogates, huge integers, deep lists.
HOSTILE_VALUES = (
    *(b'"caf\xe9"', '"调优"'.encode("gbk"), b'"\\ud800"', b'"a\\udc00b"', b'"\\ud83d\\ude00"'),
    *(b"1" + b"0" * 309, b"9" * 5000, b"-" + b"9" * 5000, b"1e400", b"-1", b"0", b"-0.0"),
    *(b"[" * 60 + b"]" * 60, b'{"a": [[{"b": []}]]}', b"null", b"true", b'"' + b"x" * 5000 + b'"'),
)
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"\s*:|(?P<value>"(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)')  # a key, or a value
_names = st.sampled_from(["conv1", "conv2", "matmul", "softmax", "调优算子"])
_times = st.floats(min_value=0.5, max_value=500, allow_nan=False).map(lambda x: round(x, 3))


@st.composite
def result_documents(draw: st.DrawFn) -> dict:  # type: ignore[type-arg]
    reports = {}
    for index in range(draw(st.integers(1, 4))):
        operators = []
        for _ in range(draw(st.integers(0, 4))):
            before, after = draw(_times), draw(_times)
            perf = {"performance_after_tune(us)": after, "performance_before_tune(us)": before,
                    "performance_improvement": f"{(before / after - 1) * 100:.2f}%",
                    "update_mode": draw(st.sampled_from(["add", "update"]))}  # fmt: skip
            operators.append({"op_name": draw(_names), "op_type": draw(st.sampled_from(["Add", ["MatMulV2", "Relu"]])),
                              "tune_performance": {draw(st.sampled_from(["Format", "Schedule"])): perf}})  # fmt: skip
        key = f"report_2026010{draw(st.integers(1, 3))}0000000{index}_{index}"
        reports[key] = [{"basic": {"tuning_name": "t", "tuning_time(s)": 1}},
                        {"OPAT": {"opat_tuning_result": "tuning successful", "repo_modified_operators": operators}}]  # fmt: skip
    return reports


def _keys_and_ops(result_file) -> list:  # type: ignore[no-untyped-def]
    return [(r.key, r.model_dump()) for r in result_file.reports]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_truncating_a_valid_file_anywhere_never_raises_and_recovers_a_prefix(data: st.DataObject) -> None:
    document = data.draw(result_documents())
    text = json.dumps(document, indent=data.draw(st.sampled_from([None, 4])), ensure_ascii=False).encode()
    cut = data.draw(st.integers(0, len(text)))
    full = normalize(decode(text, "f"), "f", "f")
    part = normalize(decode(text[:cut], "f"), "f", "f")
    recovered = _keys_and_ops(part)
    assert recovered == _keys_and_ops(full)[: len(recovered)]
    assert part.partial == (text[:cut].strip() != text.strip())


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_truncating_the_shipped_samples_anywhere(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(SAMPLE_FILES))
    text = path.read_bytes()
    cut = data.draw(st.integers(0, len(text)))
    full = load_result_file(path)
    part = normalize(decode(text[:cut], str(path)), str(path), path.name)
    recovered = _keys_and_ops(part)
    assert recovered == _keys_and_ops(full)[: len(recovered)]


def _dump(summary) -> dict:  # type: ignore[no-untyped-def]
    dumped = summary.model_dump(mode="json")
    dumped["files"] = sorted(f["path"] for f in dumped["files"])
    return dumped


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(documents=st.lists(result_documents(), min_size=1, max_size=4), seed=st.randoms())
def test_the_merge_engine_in_any_file_order_gives_the_oracles_summary(tmp_path: Path, documents: list, seed) -> None:  # type: ignore[no-untyped-def,type-arg]
    """The product's merge (report.api) holds to the reference algorithm (oracle.py) for any set of files, read in any
    order, in any number of workers' shares: the same summary, byte for byte."""
    directory = Path(tempfile.mkdtemp(dir=tmp_path))
    paths = []
    for number, document in enumerate(documents):
        path = directory / f"aoe_result_opat_20260101000000000_{number}.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        paths.append(path)
    expected = dump_json(summarize([load_result_file(path) for path in paths]))
    shuffled = list(paths)
    seed.shuffle(shuffled)
    state, _, _ = merge_files(shuffled, workers=1, cache=None)
    assert dump_json(summary_of(state)) == expected
    halves = [merge_files(shuffled[:cut], workers=1, cache=None)[0] for cut in (len(shuffled) // 2,)]
    rest = merge_files(shuffled[len(shuffled) // 2 :], workers=1, cache=None)[0]
    halves[0].absorb(rest)  # two workers' states folded together
    assert dump_json(summary_of(halves[0])) == expected


@st.composite
def hostile_files(draw: st.DrawFn) -> bytes:
    """A generated result file with some of its strings and numbers replaced by hostile values."""
    text = json.dumps(draw(result_documents()), indent=draw(st.sampled_from([None, 4]))).encode()
    for _ in range(draw(st.integers(1, 6))):
        values = [token for token in _TOKEN.finditer(text) if token["value"]]
        if not values:  # a document with no value left to replace (hypothesis found one: {} reports)
            break
        value = values[draw(st.integers(0, len(values) - 1))]
        text = text[: value.start()] + draw(st.sampled_from(HOSTILE_VALUES)) + text[value.end() :]
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_values_load_and_every_prefix_recovers_a_prefix_of_the_reports(data: st.DataObject) -> None:
    text = data.draw(hostile_files())
    cut = data.draw(st.integers(0, len(text)))
    full = normalize(decode(text, "f"), "f", "f")  # valid JSON, whatever the values: never an error
    part = normalize(decode(text[:cut], "f"), "f", "f")  # a prefix of valid JSON: a partial file, never an error
    recovered = _keys_and_ops(part)
    assert recovered == _keys_and_ops(full)[: len(recovered)]


@settings(max_examples=200, deadline=None)
@given(path=st.sampled_from(ALL_FIXTURES), data=st.data())
def test_every_prefix_of_every_fixture_decodes_or_is_an_input_error(path: Path, data: st.DataObject) -> None:
    text = path.read_bytes()
    cut = data.draw(st.integers(0, len(text)))
    try:
        outcome = normalize(decode(text[:cut], str(path)), str(path), path.name)
    except InputError as error:
        assert error.where == str(path) and "\n" not in error.message
        return
    assert isinstance(outcome, ResultFile)
    assert outcome.partial or not text[cut:].strip()
