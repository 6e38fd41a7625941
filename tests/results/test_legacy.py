"""Legacy Auto Tune result files (CANN 5.x and earlier): read, merged apart from µs, diffed, validated, never a crash."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from aoe_runner.cli.main import main
from aoe_runner.errors import ExitCode
from aoe_runner.report.api import diff_paths, summarize_paths
from aoe_runner.results.files import find_result_files
from aoe_runner.results.legacy import members_of
from aoe_runner.results.loader import load_result_file
from aoe_runner.results.validation import validate_file
from tests.conftest import DATA, SAMPLES
from tests.results.test_fuzz import FIXTURES, TOKENS

LEGACY = DATA / "legacy"
COMPLETE = LEGACY / "tune_result_20210714_102345123_pid24513.json"
CUT_OFF = LEGACY / "tune_result_20210715_081502007_pid31877.json"
FUSED = LEGACY / "tune_result_20210716_143000450_pid8802.json"
AOE_FILE = SAMPLES / "cann60" / "aoe_result_opat_20220815_093012345_23001.json"


def _entries(path: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _flag_count(entries: dict[str, dict], flag: str) -> int:  # type: ignore[type-arg]
    return sum(entry["status_data"][flag] for entry in entries.values())


def test_a_complete_file_is_one_report_with_the_bank_flags_as_counts() -> None:
    entries = _entries(COMPLETE)
    result = load_result_file(COMPLETE)
    assert (result.layout, result.partial, result.warnings, len(result.reports)) == ("legacy_auto_tune", False, [], 1)
    assert result.file_timestamp is not None and result.file_timestamp.isoformat() == "2021-07-14T10:23:45.123000"
    section = result.reports[0].legacy
    assert section is not None and section.unit == "unknown"
    counts = section.repo_summary
    assert (counts.total, counts.add) == (600, 150)  # about 600 entries, a quarter added
    assert counts.hit == _flag_count(entries, "bank_hit")
    assert counts.reserved == _flag_count(entries, "bank_reserved")
    assert counts.update == _flag_count(entries, "bank_update")
    assert counts.unsatisfied == sum(not any(e["status_data"].values()) for e in entries.values())
    assert section.status_only == sum("result_data" not in e for e in entries.values()) > 0
    changed = {key: e for key, e in entries.items() if e["status_data"]["bank_append"] or e["status_data"]["bank_update"]}
    assert {op.name for op in section.operators} == set(changed)
    first = section.operators[0]
    assert (first.before, first.after) == (
        changed[first.name]["result_data"]["before_tune"],
        changed[first.name]["result_data"]["after_tune"],
    )


def test_a_file_cut_off_mid_write_keeps_every_complete_entry() -> None:
    text = CUT_OFF.read_text()
    complete = text.count("\n    },\n")  # the fixture is indented by 4: each complete top-level entry ends so
    result = load_result_file(CUT_OFF)
    assert result.partial and result.layout == "legacy_auto_tune"
    section = result.reports[0].legacy
    assert section is not None and section.repo_summary.total == complete
    last_key = re.findall(r'^    "(\[.*\])": \{$', text, re.MULTILINE)[-1]
    (warning,) = [w for w in result.warnings if "partial file" in w]
    assert f"{complete} complete entries recovered; {last_key} was cut off mid-write" in warning


def test_fused_groups_and_status_only_entries() -> None:
    entries = _entries(FUSED)
    section = load_result_file(FUSED).reports[0].legacy
    assert section is not None
    by_name = {op.name: op for op in section.operators}
    fused = "[['resnet_model/conv2d_4/Conv2D', 'resnet_model/batch_normalization_4/FusedBatchNormV3', 'resnet_model/Relu_4']]"
    assert by_name[fused].members == (
        "resnet_model/conv2d_4/Conv2D",
        "resnet_model/batch_normalization_4/FusedBatchNormV3",
        "resnet_model/Relu_4",
    )
    status_only = [key for key, e in entries.items() if "result_data" not in e]
    assert section.status_only == len(status_only) > 0
    assert not set(status_only) & set(by_name)  # no times: counted, never an operator


@pytest.mark.parametrize(
    ("key", "members"),
    [
        ("[Adam/mul_1]", ("Adam/mul_1",)),
        ("[['scope/a', 'scope/b']]", ("scope/a", "scope/b")),
        ('[["scope/a", "scope/b"]]', ("scope/a", "scope/b")),
        ("['scope/a']", ("scope/a",)),
        ("[it's/op]", ("it's/op",)),
        ("no/brackets", ("no/brackets",)),
        ("[]", ("[]",)),
    ],
)
def test_members_of_a_key(key: str, members: tuple[str, ...]) -> None:
    assert members_of(key) == members


def test_a_directory_search_finds_legacy_files_once_each(tmp_path: Path) -> None:
    shutil.copytree(LEGACY, tmp_path / "old_project" / "autotune")
    shutil.copy(AOE_FILE, tmp_path / "old_project")
    files, errors = find_result_files([str(tmp_path)])
    assert errors == []
    assert sorted(p.name for p in files) == sorted([AOE_FILE.name, COMPLETE.name, CUT_OFF.name, FUSED.name])


def test_a_renamed_legacy_file_is_still_read_by_its_content(tmp_path: Path) -> None:
    renamed = tmp_path / "results.json"
    shutil.copy(FUSED, renamed)
    result = load_result_file(renamed)
    assert result.layout == "legacy_auto_tune" and result.file_timestamp is None and result.reports


def test_legacy_times_are_never_added_to_microseconds() -> None:
    aoe_only = summarize_paths([str(AOE_FILE)]).summary
    mixed = summarize_paths([str(AOE_FILE), str(COMPLETE), str(FUSED)]).summary
    assert mixed.totals.operator_time_saved_us == aoe_only.totals.operator_time_saved_us
    assert mixed.operators == aoe_only.operators and mixed.op_types == aoe_only.op_types
    legacy = mixed.legacy
    assert legacy is not None and legacy.unit == "unknown" and legacy.files == 2
    operators = [op for path in (COMPLETE, FUSED) for op in load_result_file(path).reports[0].legacy.operators]  # type: ignore[union-attr]
    assert legacy.operators == len(operators)  # no operator is in both files
    assert legacy.time_saved == pytest.approx(sum(op.before - op.after for op in operators))
    assert {entry.unit for entry in legacy.entries} == {"unknown"}
    assert sorted(f.layout for f in mixed.files) == ["legacy_auto_tune", "legacy_auto_tune", "training"]


def test_the_table_keeps_legacy_times_apart_and_names_every_file_variant(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("report", str(AOE_FILE), str(LEGACY), "--top", "1000")
    assert result.code == ExitCode.OK
    main_part, legacy_part = result.out.split("Legacy Auto Tune results (CANN 5.x and earlier)\n")
    assert "Adam/mul_" not in main_part  # no legacy entry among the µs rows
    assert "unit not stated" in legacy_part and "µs" not in legacy_part.split("left out of every figure above")[1]
    table = legacy_part.split("Legacy Auto Tune operators by time saved (time unit not stated)\n")[1].split("\n\n")[1]
    assert table.splitlines()[0].split() == ["operator", "before", "after", "speed-up", "saved", "update", "tuned", "flag"]
    files = result.out.split("Files by variant\n")[1]
    assert re.search(rf"{re.escape(str(COMPLETE))} +legacy Auto Tune", files)
    assert re.search(rf"{re.escape(str(CUT_OFF))} +legacy Auto Tune \(CANN 5.x and earlier\) +1 +yes", files)
    assert re.search(rf"{re.escape(str(AOE_FILE))} +AOE training", files)


def test_csv_and_json_say_unit_unknown(cli) -> None:  # type: ignore[no-untyped-def]
    rows = list(csv.DictReader(io.StringIO(cli("report", str(AOE_FILE), str(FUSED), "-f", "csv").out)))
    legacy = [row for row in rows if row["kind"] == "legacy_operator"]
    assert legacy and {row["unit"] for row in legacy} == {"unknown"}
    assert {row["unit"] for row in rows if row["kind"] == "operator"} <= {"us", "µs"}
    document = json.loads(cli("report", str(FUSED), "-f", "json").out)
    assert document["legacy"]["unit"] == "unknown" and document["files"][0]["layout"] == "legacy_auto_tune"
    assert document["totals"]["operator_time_saved_us"] == 0
    assert "legacy" not in json.loads(cli("report", str(AOE_FILE), "-f", "json").out)  # AOE files' json is as it was


def _legacy_file(path: Path, entries: dict[str, tuple[int, int]]) -> Path:
    flags = {"bank_append": True, "bank_hit": False, "bank_reserved": False, "bank_update": False}
    document = {
        key: {"result_data": {"after_tune": after, "before_tune": before}, "status_data": flags, "ticks_best": []}
        for key, (before, after) in entries.items()
    }
    path.write_text(json.dumps(document))
    return path


def test_the_latest_legacy_result_wins_and_a_slower_one_is_a_conflict(tmp_path: Path) -> None:
    first = _legacy_file(tmp_path / "tune_result_20210101_000000000_pid1.json", {"[a/b]": (100, 50), "[c/d]": (100, 80)})
    second = _legacy_file(tmp_path / "tune_result_20210102_000000000_pid2.json", {"[a/b]": (100, 60), "[['c/d']]": (90, 70)})
    legacy = summarize_paths([str(second), str(first)]).summary.legacy
    assert legacy is not None
    by_label = {" + ".join(entry.members): entry for entry in legacy.entries}
    assert (by_label["a/b"].after, by_label["a/b"].times_tuned) == (60, 2)
    assert by_label["a/b"].conflict is not None and legacy.conflicts == ["a/b"]
    assert (by_label["c/d"].after, by_label["c/d"].name) == (70, "[['c/d']]")  # the same operator, however keyed


def test_a_diff_compares_legacy_entries_only_with_legacy_entries(tmp_path: Path) -> None:
    old = _legacy_file(tmp_path / "tune_result_20210101_000000000_pid1.json", {"[a/b]": (100, 50), "[gone]": (10, 9)})
    new = _legacy_file(tmp_path / "tune_result_20210102_000000000_pid2.json", {"[a/b]": (100, 40)})
    diff = diff_paths([str(old), str(AOE_FILE)], [str(new)], 2.0).diff
    by_label = {change.label: change for change in diff.changes}
    changed = by_label["a/b"]
    assert (changed.kind, changed.unit, changed.change.value) == ("legacy_operator", "unknown", "improved")
    assert by_label["gone"].change.value == "not_in_new"
    assert {c.unit for c in diff.changes if c.kind == "operator"} == {"us"}
    assert (diff.old.legacy_operators, diff.new.legacy_operators) == (2, 1)


@pytest.mark.parametrize("path", [COMPLETE, FUSED], ids=lambda p: p.name)
def test_validate_accepts_the_legacy_variant(path: Path) -> None:
    assert validate_file(path) == []


def test_validate_names_what_is_wrong_in_a_legacy_file(tmp_path: Path) -> None:
    entries = _entries(FUSED)
    key = next(iter(entries))
    entries[key]["status_data"]["bank_hit"] = "yes"
    del entries[key]["result_data"]["after_tune"]
    broken = tmp_path / "tune_result_20210716_143000450_pid8802.json"
    broken.write_text(json.dumps(entries))
    problems = {(p.json_path, p.message) for p in validate_file(broken)}
    where = "$['" + key.replace("'", "\\'") + "']"  # jsonschema escapes the quotes of a fused group's key
    assert (f"{where}.status_data.bank_hit", "'yes' is not of type 'boolean'") in problems
    assert (f"{where}.result_data", "'after_tune' is a required property") in problems


def test_the_byte_fuzz_covers_the_legacy_fixtures() -> None:
    assert {COMPLETE, CUT_OFF, FUSED} <= set(FIXTURES)


_SMALL_FIXTURES = (CUT_OFF.read_bytes(), FUSED.read_bytes(), COMPLETE.read_bytes()[:12_000])


@st.composite
def _legacy_bytes(draw: st.DrawFn) -> bytes:
    data = draw(st.sampled_from(_SMALL_FIXTURES))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["insert", "flip", "delete", "truncate"]))
        if kind == "insert":
            data = data[:at] + draw(st.sampled_from(TOKENS) | st.binary(min_size=1, max_size=8)) + data[at:]
        elif kind == "flip":
            data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
        elif kind == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 64)) :]
        else:
            data = data[:at]
    return data


def _exit_code(*argv: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(list(argv))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=_legacy_bytes() | st.binary(max_size=64))
@example(data=FUSED.read_bytes())
def test_any_bytes_in_a_tune_result_file_never_give_an_internal_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "tune_result_20210714_102345123_pid24513.json"
        path.write_bytes(data)
        for output_format in ("table", "json", "csv"):
            code = _exit_code("report", "-f", output_format, str(path))
            assert code in (ExitCode.OK, ExitCode.BAD_INPUT)
            assert code == ExitCode.OK or data != FUSED.read_bytes()  # an intact file is read
        assert _exit_code("report", directory) in (ExitCode.OK, ExitCode.BAD_INPUT)
        assert _exit_code("validate", str(path)) in (ExitCode.OK, ExitCode.FINDING, ExitCode.BAD_INPUT)
