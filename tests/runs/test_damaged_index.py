"""runs.db is derived from the manifests: whatever is put in its place or written into it by hand, every history
command answers from the manifests, in time, with a warning (issue 42, findings 5 to 7)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.tune.runner import Home, aoe_runner, tune

pytestmark = pytest.mark.slow  # real commands against a damaged history, one home copy per case

HISTORY_COMMANDS = (("runs", "list"), ("runs", "show"), ("report", "--run", "latest"), ("runs", "prune", "--keep", "5"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Home:
    home = Home(tmp_path_factory.mktemp("recorded"))
    code, _, err = tune(home, "progress")
    assert code == 0, err
    return home


@pytest.fixture
def home(recorded: Home, tmp_path: Path) -> Home:
    """A copy of the recorded home, to damage."""
    copy = Home(tmp_path)
    shutil.copytree(recorded.root / "home", tmp_path / "home", symlinks=True)
    return copy


def _db(home: Home) -> Path:
    return home.root / "home" / "runs.db"


def _listed(home: Home) -> tuple[list[str], str]:
    done = aoe_runner(home, "runs", "list", "--format", "csv")
    assert done.returncode == 0, done.stderr
    return [line.split(",")[0] for line in done.stdout.splitlines()[1:]], done.stderr


@pytest.mark.parametrize("place", ["runs.db", "runs.db-wal", "runs.db-shm"])
@pytest.mark.parametrize("command", HISTORY_COMMANDS, ids=" ".join)
def test_a_fifo_in_the_index_place_never_hangs_a_command(home: Home, place: str, command: tuple[str, ...]) -> None:
    target = home.root / "home" / place
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    done = aoe_runner(home, *command)  # the runner's timeout (60 s) would fail the test: no FIFO is ever opened
    assert done.returncode in (0, 1), done.stderr
    assert f"{place} is a FIFO, not a file" in done.stderr
    assert not stat_is_fifo(_db(home))


def stat_is_fifo(path: Path) -> bool:
    import stat

    return path.exists() and stat.S_ISFIFO(path.stat().st_mode)


def test_a_directory_in_its_place_is_set_aside(home: Home) -> None:
    _db(home).unlink()
    _db(home).mkdir()
    listed, warned = _listed(home)
    assert listed == [home.only_manifest()["id"]] and "runs.db is a directory, not a file" in warned
    assert _db(home).is_file()


@pytest.mark.parametrize(
    ("column", "value", "why"),
    [
        ("status", "exploded", "status 'exploded' is not one of"),
        ("status", 42, "status '42' is not one of"),  # TEXT columns keep numbers as text
        ("started_at", "not a date", "started_at 'not a date' is not a time"),
        ("ended_at", 7, "ended_at '7' is not a time"),
        ("script", b"\xff", "script b'\\xff' is not text"),
    ],
)
def test_a_row_edited_by_hand_is_rebuilt_from_its_manifest(home: Home, column: str, value: object, why: str) -> None:
    with sqlite3.connect(_db(home)) as db:
        db.execute(f"UPDATE runs SET {column} = ?", (value,))
    for number, command in enumerate(HISTORY_COMMANDS):
        done = aoe_runner(home, *command)
        assert done.returncode in (0, 1) and "internal error" not in done.stderr, (command, done.stderr)
        assert (why in done.stderr) == (number == 0), (command, done.stderr)  # said once, by the command that rebuilt
    listed, _ = _listed(home)
    assert listed == [home.only_manifest()["id"]]
    with sqlite3.connect(_db(home)) as db:  # the first command rebuilt it: the manifest's value is back
        (status,) = db.execute("SELECT status FROM runs").fetchone()
    assert status == home.only_manifest()["status"]


def test_the_first_command_says_why_it_rebuilt(home: Home) -> None:
    with sqlite3.connect(_db(home)) as db:
        db.execute("UPDATE runs SET status = 'exploded'")
    _, warned = _listed(home)
    assert "status 'exploded' is not one of" in warned and "rebuilt the index from the manifests" in warned
    assert _listed(home)[1] == ""  # and the next command finds nothing to say


@pytest.mark.parametrize("run_id", ["20260101-000000-deadbeef", "../../x"])
def test_a_row_without_a_manifest_is_never_listed(home: Home, run_id: str) -> None:
    with sqlite3.connect(_db(home)) as db:
        row = list(db.execute("SELECT * FROM runs").fetchone())
        row[0] = run_id
        db.execute(f"INSERT INTO runs VALUES ({', '.join('?' * len(row))})", row)
    listed, warned = _listed(home)
    assert listed == [home.only_manifest()["id"]] and "rebuilt the index from the manifests" in warned


def test_a_run_directory_removed_by_hand_leaves_the_listing(home: Home) -> None:
    (run,) = [path for path in (home.root / "home" / "runs").iterdir() if path.is_dir()]
    shutil.rmtree(run)
    listed, warned = _listed(home)
    assert listed == [] and "has no manifest" in warned


def test_a_row_deleted_by_hand_is_indexed_again_before_a_prune(home: Home) -> None:
    """A readable manifest without its row is indexed before the removal lock is taken: prune neither calls it
    unreadable nor keeps every stored bank content for its sake."""
    with sqlite3.connect(_db(home)) as db:
        db.execute("DELETE FROM runs")
    done = aoe_runner(home, "runs", "prune", "--keep", "5", "--yes")
    assert done.returncode == 0 and "could not be read" not in done.stderr, done.stderr
    assert _listed(home)[0] == [home.only_manifest()["id"]]
