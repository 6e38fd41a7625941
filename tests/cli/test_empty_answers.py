"""Dry runs and empty answers say so: what a dry run would do and that nothing changed, which filter matched nothing
among how many runs, a page refused when there is nothing to show; and the conventions -V and `runs show` alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aoe_runner import __version__
from tests.tune.runner import Home, aoe_runner, tune


@pytest.fixture
def recorded(tmp_path: Path) -> Home:
    """A home with one real tuning run of the simulator, which wrote a file into its bank."""
    home = Home(tmp_path)
    code, _, err = tune(home, "progress", options=("--bank", "bank"))
    assert code == 0, err
    return home


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_the_version_has_the_short_flag_every_tool_has(cli, flag: str) -> None:  # type: ignore[no-untyped-def]
    result = cli(flag)
    assert (result.code, result.out) == (0, f"aoe-runner {__version__} (plain Python)\n")  # the editable install


def test_runs_show_alone_shows_the_latest_run(recorded: Home) -> None:
    alone, latest = aoe_runner(recorded, "runs", "show", "--json"), aoe_runner(recorded, "runs", "show", "latest", "--json")
    assert alone.returncode == 0, alone.stderr
    assert json.loads(alone.stdout)["id"] == json.loads(latest.stdout)["id"] == recorded.only_manifest()["id"]


def test_a_filter_that_matches_nothing_says_which_and_how_many_runs_there_are(recorded: Home) -> None:
    listed = aoe_runner(recorded, "runs", "list", "--script", "nothere.py")
    assert (listed.returncode, listed.stdout) == (0, "no runs match --script nothere.py (1 run recorded)\n")
    both = aoe_runner(recorded, "runs", "list", "--script", "nothere.py", "--mode", "subgraph")
    assert both.stdout == "no runs match --script nothere.py --mode subgraph (1 run recorded)\n"
    assert aoe_runner(recorded, "runs", "list", "--json", "--script", "nothere.py").stdout == ""  # json: no rows


def test_an_empty_history_says_no_runs_recorded(tmp_path: Path) -> None:
    assert aoe_runner(Home(tmp_path), "runs", "list", "--script", "x.py").stdout == "no runs recorded\n"


def test_runs_report_refuses_an_empty_selection_and_writes_no_page(recorded: Home) -> None:
    page = recorded.root / "history.html"
    done = aoe_runner(recorded, "runs", "report", "--script", "nothere.py", "-o", str(page))
    assert done.returncode == 4
    assert done.stderr == "error: runs report: no tuning run of --script nothere.py to show (1 run recorded); no page written\n"
    assert not page.exists()


def test_a_dry_restore_says_what_it_would_do_and_that_nothing_changed(recorded: Home) -> None:
    bank = recorded.root / "bank"
    before = {path.relative_to(bank): path.read_bytes() for path in bank.rglob("*") if path.is_file()}
    run_id = recorded.only_manifest()["id"]
    preview = aoe_runner(recorded, "bank", "restore", run_id, "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert preview.stdout.startswith(("remove  ", "restore "))  # the plan, as a real restore prints it
    assert f"would restore {bank} to its state before run {run_id} (" in preview.stderr
    assert preview.stderr.rstrip().endswith("; nothing changed")
    assert {path.relative_to(bank): path.read_bytes() for path in bank.rglob("*") if path.is_file()} == before
