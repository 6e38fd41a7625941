"""`aoe-runner preflight` end to end: this host, saved hosts, bad values, JSON against its generated schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.conftest import DATA, ROOT

SERVER = DATA / "facts/server-192c-8npu.json"
SMALL = DATA / "facts/small-2c.json"


def test_this_host_runs_reports_truthfully_and_exits_1(cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    for name in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "AOE_MODE", "TE_PARALLEL_COMPILER"):
        monkeypatch.delenv(name, raising=False)
    result = cli("preflight", "--json")
    assert result.code == 1
    report = json.loads(result.out)
    checks = {check["id"]: check for check in report["checks"]}
    assert checks["npu"]["status"] == ("pass" if report["facts"]["npus"]["devices"] else "fail")
    assert checks["cann"]["status"] == "fail"
    assert checks["cpus"]["observed"] == str(report["facts"]["logical_cpus"])


def test_the_json_matches_its_generated_schema(cli) -> None:  # type: ignore[no-untyped-def]
    schema = json.loads((ROOT / "schemas/preflight-report.schema.json").read_text())
    result = cli("preflight", "--json", "--facts", str(SERVER), "--model-memory", "40GiB")
    Draft202012Validator(schema).validate(json.loads(result.out))


def test_a_saved_big_server_passes_every_check(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("preflight", "--facts", str(SERVER), "--model-memory", "40GiB", "-v")
    assert result.code == 0, result.out
    assert "0 failed, 0 warnings, 20 passed, 1 skipped" in result.out  # the workspace check: no model file
    assert (
        "cpus: P x (TE_PARALLEL_COMPILER + TUNING_PARALLEL_NUM + min(cores/2, 8) + 50) = 1 x (16 + 16 + 8 + 50) = 90"
        in result.out
    )


def test_facts_saved_before_the_inventory_still_load_and_show_no_npu_smi(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("preflight", "--facts", str(SERVER), "--json")
    facts = json.loads(result.out)["facts"]
    assert (facts["npus"]["listed"], facts["cann"]["inner_version"], facts["aoe_ini"]["run_loop"]) == ([], None, None)
    header = cli("preflight", "--facts", str(SERVER)).out.splitlines()[1:3]
    assert header == [
        "host atlas-800t-a2: 192 CPUs, 1500.0 GiB available, SoC Ascend910B3, CANN 8.0.RC3",
        "npu-smi: not found",
    ]


def test_the_table_puts_failures_first_with_their_fixes(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("preflight", "--facts", str(SMALL), "--mode", "subgraph", "--procs", "2")
    assert result.code == 1
    rows = [line for line in result.out.splitlines() if line[:4] in ("FAIL", "WARN", "skip", "pass")]
    statuses = [row.split()[0] for row in rows]
    assert statuses == sorted(statuses, key=["FAIL", "WARN", "skip", "pass"].index)
    assert "P x (2 x TUNING_PARALLEL_NUM + TE_PARALLEL_COMPILER) = 2 x (2 x 8 + 8) = 48" in result.out
    assert "free 8.0 GiB in /home/tuner" in result.out  # 20 GiB - 12 GiB


def test_strict_fails_on_warnings(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    facts = json.loads(SERVER.read_text())
    facts["lspci"] = None  # a warning only
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    assert cli("preflight", "--facts", str(path), "--model-memory", "1GiB").code == 0
    assert cli("preflight", "--facts", str(path), "--model-memory", "1GiB", "--strict").code == 1


def test_save_facts_then_check_them_elsewhere(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    saved = tmp_path / "host.json"
    first = cli("preflight", "--json", "--save-facts", str(saved))
    second = cli("preflight", "--json", "--facts", str(saved))
    assert json.loads(first.out)["checks"] == json.loads(second.out)["checks"]
    assert f"wrote {saved}" in first.err


def test_save_facts_to_an_unwritable_place_exits_4_and_names_it(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "missing-dir" / "host.json"
    result = cli("preflight", "--save-facts", str(target))
    assert result.code == 4 and f"{target}: cannot write" in result.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model-memory", "lots"], "--model-memory: 'lots' is not a size"),
        (["--mode", "fast"], "--mode: 'fast' is not one of op, subgraph"),
        (["--procs", "0"], "--procs"),
        (["--facts", str(SERVER), "--soc", "Ascend910B3"], "cannot change saved --facts"),
    ],
)
def test_bad_values_are_usage_errors_in_one_line(cli, argv: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    result = cli("preflight", *argv)
    assert result.code == 2
    assert message in result.err and len(result.err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("{", "not host facts that --save-facts wrote"),
        ('{"hostname": 3}', "not host facts that --save-facts wrote"),
    ],
)
def test_bad_facts_files_exit_4(cli, tmp_path: Path, content: str | None, message: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "facts.json"
    if content is not None:
        path.write_text(content)
    result = cli("preflight", "--facts", str(path))
    assert result.code == 4 and message in result.err and str(path) in result.err


@pytest.mark.parametrize(
    ("variable", "value", "check_id"),
    [
        ("TE_PARALLEL_COMPILER", "abc", "te_parallel_compiler"),
        ("AOE_MODE", "7", "aoe_mode"),
        ("REPEAT_TUNE", "maybe", "repeat_tune"),
        ("GE_USE_STATIC_MEMORY", "1", "static_memory"),
    ],
)
def test_bad_environment_values_are_failed_checks(cli, monkeypatch, variable: str, value: str, check_id: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(variable, value)
    result = cli("preflight", "--json")
    check = next(c for c in json.loads(result.out)["checks"] if c["id"] == check_id)
    assert (result.code, check["status"], check["observed"]) == (1, "fail", value)


def test_facts_without_a_field_say_which_field_in_plain_words(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    facts = tmp_path / "facts.json"
    facts.write_text('{"hostname": "x"}')
    result = cli("preflight", "--facts", str(facts))
    assert (result.code, result.err) == (
        4,
        f"error: {facts}: not host facts that --save-facts wrote (it has no field gathered_at)\n",
    )
