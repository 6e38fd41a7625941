"""A record moved to another directory name, or edited to name another run, is left out of the index with one
warning each time the index is rebuilt, and the others are still listed and reached as `latest` (issue 42, second
pass: such a record used to be indexed under its own id, rejected as a row with no manifest, and rebuilt forever)."""

from __future__ import annotations

import json

import pytest

from tests.tune.runner import Home, aoe_runner, tune

pytestmark = pytest.mark.slow  # several real tunes each


@pytest.mark.parametrize("how", ["renamed", "edited"])
def test_a_record_that_does_not_name_its_directory_is_left_out_once(tmp_path, how: str) -> None:  # type: ignore[no-untyped-def]
    home = Home(tmp_path)
    for _ in range(2):
        assert tune(home, "exit", "0")[0] == 0
    runs = tmp_path / "home" / "runs"
    older, newer = [manifest["id"] for manifest in home.manifests()]  # oldest first
    if how == "renamed":
        (runs / newer).rename(runs / "old-run")
        odd = runs / "old-run"
    else:
        manifest = runs / newer / "manifest.json"
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "id": older}))
        odd = runs / newer
    (tmp_path / "home" / "runs.db").unlink()
    first = aoe_runner(home, "runs", "list")
    assert first.returncode == 0 and f"{odd / 'manifest.json'}: names run" in first.stderr
    second = aoe_runner(home, "runs", "show", "latest")
    assert second.returncode == 0, second.stderr
    assert f"run {older}:" in second.stdout and "rebuilt the index" not in second.stderr


def _three_runs(tmp_path):  # type: ignore[no-untyped-def]
    home = Home(tmp_path)
    for _ in range(3):
        assert tune(home, "progress", "--reports", "1", "--lines", "0", "--interval", "0", options=("--bank", "bank"))[0] == 0
    return home, [manifest["id"] for manifest in home.manifests()]  # oldest first (ids of one second sort at random)


def test_prune_decides_what_to_delete_from_the_records_not_from_index_rows_edited_by_hand(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    home, runs = _three_runs(tmp_path)
    with sqlite3.connect(tmp_path / "home" / "runs.db") as db:
        db.execute("UPDATE runs SET bank_before = NULL WHERE id = ?", (runs[-1],))
    pruned = aoe_runner(home, "runs", "prune", "--keep", "1", "--yes")
    assert pruned.returncode == 0, pruned.stderr
    restore = aoe_runner(home, "bank", "restore", runs[-1], "--dry-run")
    assert restore.returncode == 0, restore.stderr  # the kept run's bank snapshot is whole


def test_one_unreadable_inventory_does_not_hold_up_the_removal_of_other_runs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    home, runs = _three_runs(tmp_path)
    kept = json.loads((tmp_path / "home" / "runs" / runs[-1] / "manifest.json").read_text())["bank_before"]["stored"]
    (tmp_path / "home" / "inventories" / kept[:2] / f"{kept}.json.gz").unlink()
    pruned = aoe_runner(home, "runs", "prune", "--keep", "1", "--yes")
    assert pruned.returncode == 0, pruned.stderr
    assert "no stored bank contents were removed" in pruned.stderr
    assert sorted(path.name for path in (tmp_path / "home" / "runs").iterdir()) == [runs[-1]]


def test_a_copied_record_is_refused_and_the_run_it_names_is_left_alone(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A copy of a run's directory under another id: `runs rm COPY` removed the run the copy names, and `runs show`
    and `bank restore` acted on it too. Each now refuses the copy, naming it, and the run stays."""
    import shutil

    home = Home(tmp_path)
    assert tune(home, "exit", "0")[0] == 0
    (run,) = [manifest["id"] for manifest in home.manifests()]
    runs = tmp_path / "home" / "runs"
    shutil.copytree(runs / run, runs / "20250101-000000-deadbeef")
    for argv in (("runs", "show"), ("runs", "rm"), ("bank", "restore", "--dry-run")):
        refused = aoe_runner(home, *argv, "20250101-000000-deadbeef")
        assert refused.returncode == 4 and f"names run '{run}', not its directory's" in refused.stderr, refused.stderr
    assert (runs / run / "manifest.json").is_file() and aoe_runner(home, "runs", "show", run).returncode == 0


@pytest.mark.parametrize("reference", ["a" * 300, "\udcff", "2026 11", "../x", "RUN"])
def test_what_no_run_id_can_be_is_one_line_and_exit_4(tmp_path, reference: str) -> None:  # type: ignore[no-untyped-def]
    """A 300-letter id was an internal error (file name too long), and so was one not UTF-8."""
    done = aoe_runner(Home(tmp_path), "runs", "show", reference)
    assert done.returncode == 4 and "not a run id" in done.stderr and "internal error" not in done.stderr, done.stderr


def test_a_script_filter_no_file_could_have_is_matched_not_a_crash(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`runs list --script <300 letters>`: pathlib's exists() raised 'file name too long', an internal error."""
    home = Home(tmp_path)
    assert tune(home, "exit", "0")[0] == 0
    done = aoe_runner(home, "runs", "list", "--script", "a" * 300)
    assert done.returncode == 0 and "internal error" not in done.stderr, done.stderr
