"""The run history and what reads it: runs list/show, report --run/--diff, env drift, bank restore, the index."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aoe_runner.runs.history import RunFilter, RunStore
from tests.tune.runner import SIMULATOR, Home, aoe_runner, tune


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """Three recorded runs: two that tune (3 then 2 reports) into one bank, one that fails."""
    home = Home(tmp_path_factory.mktemp("history"))
    (home.root / "bank" / "Ascend910B3" / "cube").mkdir(parents=True)
    (home.root / "bank" / "Ascend910B3" / "cube" / "op_0.bin").write_bytes(b"the good strategy")
    (home.root / "bank" / "subgraph.json").write_text("{}")
    for script_args in (["progress", "--reports", "3"], ["progress", "--reports", "2"], ["exit", "2"]):
        tune(home, *script_args, "--interval", "0", options=("--bank", "bank"))
    return home


def _ids(home: Home) -> list[str]:
    return [m["id"] for m in sorted(home.manifests(), key=lambda m: m["started_at"])]


def test_runs_list_is_newest_first_and_filters(history: Home) -> None:
    oldest, middle, newest = _ids(history)
    listing = aoe_runner(history, "runs", "list").stdout.splitlines()
    assert [line.split()[0] for line in listing[2:]] == [newest, middle, oldest]
    failed = aoe_runner(history, "runs", "list", "--status", "failed", "--json").stdout.splitlines()
    assert [json.loads(line)["id"] for line in failed] == [newest]
    assert aoe_runner(history, "runs", "list", "--script", "train.py", "--limit", "1", "--json").stdout.count("\n") == 1
    assert aoe_runner(history, "runs", "list", "--mode", "subgraph").stdout == "no runs match --mode subgraph (3 runs recorded)\n"
    bad = aoe_runner(history, "runs", "list", "--status", "lost")
    assert bad.returncode == 2 and "--status: 'lost' is not one of running, succeeded" in bad.stderr


def test_runs_list_shows_each_tuning_runs_gain_as_report_computes_it(history: Home) -> None:
    oldest, middle, newest = _ids(history)
    rows = {row["id"]: row for row in map(json.loads, aoe_runner(history, "runs", "list", "--json").stdout.splitlines())}
    for run in (oldest, middle):
        totals = json.loads(aoe_runner(history, "report", "--run", run, "--format", "json").stdout)["totals"]
        saved = totals["operator_time_saved_us"] + 1000 * totals["subgraph_time_saved_ms"]
        assert rows[run]["saved_us"] == pytest.approx(saved) and saved > 0
        assert rows[run]["median_speedup"] == pytest.approx(totals["median_operator_speedup"])
    assert (rows[newest]["saved_us"], rows[newest]["median_speedup"]) == (None, None)  # it failed, with no results
    table = aoe_runner(history, "runs", "list", env={"COLUMNS": "80"}).stdout.splitlines()
    assert table[0].split()[:6] == ["run", "status", "mode", "saved", "speed-up", "script"]
    saved_text = f"{rows[oldest]['saved_us']:.3g} µs"
    assert any(
        line.startswith(oldest) and saved_text in line and f"{rows[oldest]['median_speedup']:.3f}x" in line for line in table
    )


def test_a_listing_keeps_each_ended_runs_gain_and_reads_its_files_once(history: Home, tmp_path: Path) -> None:
    copy = Home(tmp_path / "copy")
    shutil.copytree(history.root, copy.root)
    first = aoe_runner(copy, "runs", "list", "--json").stdout
    for result in (copy.root / "home" / "runs").glob("*/work/aoe_data/*.json"):
        result.unlink()  # a second listing that read the files again would find none
    assert aoe_runner(copy, "runs", "list", "--json").stdout == first
    (copy.root / "home" / "runs.db").unlink()  # the index and what it kept: measured again, from no files now
    again = [json.loads(line) for line in aoe_runner(copy, "runs", "list", "--json").stdout.splitlines()]
    assert [row["saved_us"] for row in again] == [None, None, None]


def test_a_kept_gain_edited_by_hand_is_measured_again_and_an_unreadable_file_is_said(history: Home, tmp_path: Path) -> None:
    import sqlite3

    copy = Home(tmp_path / "copy")
    shutil.copytree(history.root, copy.root)
    first = aoe_runner(copy, "runs", "list", "--json").stdout
    with sqlite3.connect(copy.root / "home" / "runs.db") as db:
        db.execute("UPDATE gains SET saved_us = 'abc', median_speedup = 9e999")
    again = aoe_runner(copy, "runs", "list", "--json")
    assert (again.returncode, again.stdout, again.stderr) == (0, first, "")
    assert aoe_runner(copy, "runs", "list", "--sort", "saved", "-f", "csv").returncode == 0
    newest_with_results = next(json.loads(line)["id"] for line in first.splitlines() if json.loads(line)["saved_us"])
    (result,) = (copy.root / "home" / "runs" / newest_with_results).glob("work/aoe_data/*.json")
    result.write_text('{"report_x": [garbage')
    (copy.root / "home" / "runs.db").unlink()  # nothing kept: measured again
    listed = aoe_runner(copy, "runs", "list", "--json")
    assert listed.returncode == 0 and listed.stderr.count("warning: ") == 1, listed.stderr
    assert f"run {newest_with_results}: " in listed.stderr and str(result.name) in listed.stderr
    best = aoe_runner(copy, "bank", "best", "--json")
    assert best.returncode == 0 and best.stderr.count("warning: ") == 1 and "left out of the best results" in best.stderr
    assert newest_with_results not in best.stdout
    assert aoe_runner(copy, "runs", "list").stderr.count("warning: ") == 1  # not kept: said again, and read again


def test_runs_list_sort_saved_puts_the_run_that_saved_most_first(history: Home) -> None:
    oldest, middle, newest = _ids(history)  # the oldest tuned 3 reports, the middle 2: the oldest saved more
    best = aoe_runner(history, "runs", "list", "--sort", "saved", "--limit", "1", "--json").stdout
    assert [json.loads(line)["id"] for line in best.splitlines()] == [oldest]
    every = aoe_runner(history, "runs", "list", "--sort", "saved", "-f", "csv").stdout.splitlines()
    assert [line.split(",")[0] for line in every[1:]] == [oldest, middle, newest]  # no gain last
    assert every[0].startswith("run,started,status,mode,saved µs,speed-up,host,")
    rows = {row["id"]: row for row in map(json.loads, aoe_runner(history, "runs", "list", "--json").stdout.splitlines())}
    for line in every[1:]:
        cells = line.split(",")
        assert cells[4:7] == [
            _number(rows[cells[0]]["saved_us"]),
            _number(rows[cells[0]]["median_speedup"]),
            rows[cells[0]]["host"],
        ]
    bad = aoe_runner(history, "runs", "list", "--sort", "best")
    assert (bad.returncode, bad.stderr) == (
        2,
        "error: --sort: 'best' is not one of started, saved (see 'aoe-runner runs list --help')\n",
    )


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def test_bank_best_answers_from_the_local_history(history: Home) -> None:
    """Per operator, the run whose tuned time was lowest: the result files of this host's runs, read as report reads
    them; a tie goes to the newer run, as on a shared store."""
    oldest, middle, _ = _ids(history)
    done = aoe_runner(history, "bank", "best", "--json")
    assert done.returncode == 0, done.stderr
    found = [json.loads(line) for line in done.stdout.splitlines()]
    expected: dict[str, tuple[float, str]] = {}
    for run in (middle, oldest):  # newest first: the newer run keeps a tie
        summary = json.loads(aoe_runner(history, "report", "--run", run, "--format", "json").stdout)
        for operator in summary["operators"]:
            label = f"{operator['name']} [{'+'.join(operator['op_types'])}] ({operator['tuning_mode']})"
            if label not in expected or operator["after_us"] < expected[label][0]:
                expected[label] = (operator["after_us"], run)
    assert {row["name"]: (row["tuned_us"], row["run"]) for row in found} == expected
    assert {row["run"] for row in found} == {oldest, middle}  # the oldest alone tuned layer_2
    csv_rows = aoe_runner(history, "bank", "best", "-f", "csv").stdout.splitlines()
    assert csv_rows[0] == "kind,name,tuned µs,baseline µs,speed-up,run,host,started"
    assert csv_rows[1].split(",")[4] == f"{found[0]['speedup']:g}"  # a number in csv, 2.000x in the table
    assert f"{found[0]['speedup']:.3f}x" in aoe_runner(history, "bank", "best").stdout
    assert aoe_runner(history, "bank", "best", "--soc", "Ascend310P3").stdout == (
        "no recorded tuning run (of the --soc and --script given) has operator results\n"
    )


def test_runs_show_accepts_an_id_prefix_and_latest(history: Home) -> None:
    oldest, _, newest = _ids(history)
    shown = aoe_runner(history, "runs", "show", oldest[:-2]).stdout
    assert shown.startswith(f"run {oldest}: succeeded, exit 0\n")
    assert "progress   3 reports, operators +3 added, 3 updated, 0 failures" in shown
    latest = json.loads(aoe_runner(history, "runs", "show", "latest", "--json").stdout)
    assert (latest["id"], latest["status"], latest["exit_code"]) == (newest, "failed", 2)
    missing = aoe_runner(history, "runs", "show", "1999")
    assert (missing.returncode, missing.stderr) == (4, "error: 1999: no recorded run has this id (see 'aoe-runner runs list')\n")


def test_report_run_and_diff_of_the_two_newest_runs_with_results(history: Home) -> None:
    oldest, middle, _ = _ids(history)
    summary = json.loads(aoe_runner(history, "report", "--run", oldest, "--format", "json").stdout)
    assert summary["totals"]["reports"] == 3
    auto = aoe_runner(history, "report", "--diff", "--format", "json")
    assert auto.returncode == 0
    assert auto.stderr == f"comparing run {oldest} (old) with run {middle} (new)\n"  # the failed run has no results
    explicit = aoe_runner(history, "report", "--diff", oldest, middle, "--format", "json")
    assert json.loads(explicit.stdout) == json.loads(auto.stdout)
    nothing = aoe_runner(history, "report", "--run", _ids(history)[2])
    assert nothing.returncode == 4 and "run recorded no result files (status failed)" in nothing.stderr


def test_runs_from_different_environments_are_not_compared_unless_allowed(history: Home, tmp_path: Path) -> None:
    oldest, middle, _ = _ids(history)
    other = Home(tmp_path)
    for run_id in (oldest, middle):
        source = history.root / "home" / "runs" / run_id
        target = other.root / "home" / "runs" / run_id
        target.mkdir(parents=True)
        manifest = json.loads((source / "manifest.json").read_text())
        if run_id == middle:
            manifest["fingerprint"]["soc"], manifest["fingerprint"]["cann_version"] = "Ascend910B3", "8.1.RC1"
        (target / "manifest.json").write_text(json.dumps(manifest))
        for result in manifest["result_files"]:
            (target / result["recorded"]).parent.mkdir(parents=True, exist_ok=True)
            (target / result["recorded"]).write_bytes((source / result["recorded"]).read_bytes())

    refused = aoe_runner(other, "report", "--diff", oldest, middle)
    assert refused.returncode == 5 and refused.stdout == ""
    assert (
        "were recorded in different environments (CANN version unknown != 8.1.RC1; SoC unknown != Ascend910B3)" in refused.stderr
    )
    allowed = aoe_runner(other, "report", "--diff", oldest, middle, "--allow-env-drift")
    assert allowed.returncode == 0 and "warning: comparing across environments: SoC unknown != Ascend910B3" in allowed.stderr


def test_the_index_is_rebuilt_from_the_manifests_when_runs_db_is_lost(history: Home, tmp_path: Path) -> None:
    store = RunStore(history.root / "home")
    before = store.list()
    copy = RunStore(tmp_path / "home")
    (tmp_path / "home").mkdir()
    shutil.copytree(store.runs_dir, copy.runs_dir)
    assert copy.list() == before
    assert [row.id for row in copy.list(RunFilter(status=None, limit=2))] == [row.id for row in before[:2]]


def test_bank_restore_rolls_the_bank_back_and_backs_up_what_it_replaces(history: Home) -> None:
    oldest = _ids(history)[0]
    bank = history.root / "bank"
    assert sorted(p.name for p in (bank / "Ascend910B3" / "cube").iterdir()) == ["op_0.bin", "op_1.bin", "op_2.bin"]
    tuned_op_0 = (bank / "Ascend910B3" / "cube" / "op_0.bin").read_bytes()

    preview = aoe_runner(history, "bank", "restore", oldest, "--dry-run")
    assert (
        preview.stdout
        == "restore Ascend910B3/cube/op_0.bin\nremove  Ascend910B3/cube/op_1.bin\nremove  Ascend910B3/cube/op_2.bin\n"
    )
    assert (bank / "Ascend910B3" / "cube" / "op_1.bin").exists()

    restored = aoe_runner(history, "bank", "restore", oldest)
    assert restored.returncode == 0
    assert sorted(p.name for p in (bank / "Ascend910B3" / "cube").iterdir()) == ["op_0.bin"]
    assert (bank / "Ascend910B3" / "cube" / "op_0.bin").read_bytes() == b"the good strategy"
    assert (bank / "subgraph.json").read_text() == "{}"
    (backup,) = (history.root / "home" / "bank-backups").iterdir()
    assert (backup / "Ascend910B3" / "cube" / "op_0.bin").read_bytes() == tuned_op_0
    assert sorted(p.name for p in (backup / "Ascend910B3" / "cube").iterdir()) == ["op_0.bin", "op_1.bin", "op_2.bin"]
    again = aoe_runner(history, "bank", "restore", oldest)
    assert again.returncode == 0 and "already matches its state before run" in again.stderr


def test_dry_run_prints_the_changes_and_the_command_and_runs_nothing(tmp_path: Path) -> None:
    home = Home(tmp_path)
    result = aoe_runner(
        home, "tune", str(SIMULATOR), "--mode", "sgat", "--bank", "b", "--te-parallel", "4", "--repeat-tune", "--device", "3",
        "--dry-run", "--", "exit", "0", "--flag with space",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # this host fails preflight: a real run would be refused
    lines = result.stdout.splitlines()
    assert lines[0] == f"would run in {tmp_path}:"
    assert lines[1].endswith(f"{SIMULATOR} exit 0 '--flag with space'")
    assert "  AOE_MODE=1" in lines and f"  TUNE_BANK_PATH={tmp_path / 'b'}" in lines
    assert "  TE_PARALLEL_COMPILER=4" in lines and "  REPEAT_TUNE=True" in lines and "  ASCEND_DEVICE_ID=3" in lines
    assert f"  ASCEND_WORK_PATH='{tmp_path / 'home' / 'runs' / '<run id>' / 'work'}'" in lines
    assert not (tmp_path / "home" / "runs").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["tune", "x.py"], "tune needs --mode op or --mode subgraph"),
        (["tune", "x.py", "--mode", "gdat"], "--mode: 'gdat' is not one of op, subgraph"),
        (["tune", "x.py", "--mode", "op", "--timeout", "soon"], "--timeout: 'soon' is not a duration"),
        (["tune", "x.py", "--mode", "op", "--te-parallel", "40"], "--te-parallel: 40 is outside 1..32"),
        (["tune", "x.py", "--mode", "op", "--epochs", "3"], "No such option: --epochs"),
    ],
)
def test_bad_tune_options_are_usage_errors(cli, argv: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    result = cli(*argv)
    assert result.code == 2 and message in result.err and result.err.count("\n") == 1


def test_a_missing_script_is_bad_input(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli("tune", str(tmp_path / "nope.py"), "--mode", "op")
    assert (result.code, result.err) == (4, f"error: {tmp_path / 'nope.py'}: no such training script\n")
