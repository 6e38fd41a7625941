"""Other users: files and directories this user cannot search or read are one exit-4 line each, the rest still
reported; the report cache is not used where another user could swap it.

Run as other uids (setpriv, as root): root reads everything, so only another user meets these errors. pathlib's
is_dir() and is_file() raise PermissionError for a path inside a directory the user cannot search; that was an
internal error (exit 3) before.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.common.locks.users import ANOTHER, NOBODY, as_user, make_shared_tree, needs_root
from tests.conftest import SAMPLES

RUN_CLI = "import sys; from aoe_runner.__main__ import main; sys.argv[0] = 'aoe-runner'; raise SystemExit(main())"
READABLE = "aoe_result_opat_20260310142233517_41237.json"
IN_LISTABLE = "aoe_result_opat_20260317091500120_52008.json"
IN_PRIVATE = "aoe_result_opat_20260311101500123_51002.json"


@pytest.fixture
def tree() -> Iterator[Path]:
    """readable/ (a file anyone reads), listable/ (mode 744: its names can be listed, its files not reached) and
    private/ (mode 700), all root's."""
    top = make_shared_tree()
    for name, mode, sample in (
        ("readable", 0o755, "training_opat"),
        ("listable", 0o744, "retune"),
        ("private", 0o700, "offline"),
    ):
        directory = top / name
        directory.mkdir()
        for source in (SAMPLES / sample).glob("aoe_result_*.json"):
            shutil.copy(source, directory / source.name)
            os.chmod(directory / source.name, 0o644)
        os.chmod(directory, mode)
    yield top
    shutil.rmtree(top)


def _as_nobody(*arguments: str, home: str = "/nonexistent/aoe-runner-home") -> tuple[int, str, str]:
    process = as_user(NOBODY, RUN_CLI, *arguments, env={"AOE_RUNNER_HOME": home, "AOE_RUNNER_CACHE": "on"})
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


@needs_root
@pytest.mark.parametrize("command", ["report", "validate"])
def test_a_directory_search_reports_what_it_cannot_reach_and_the_rest(tree: Path, command: str) -> None:
    code, out, err = _as_nobody(command, str(tree), *(["--format", "json"] if command == "report" else []))

    assert code == 4, err
    assert err.splitlines() == [
        f"error: {tree / 'private'}: cannot search: Permission denied",  # found while searching: said first
        f"error: {tree / 'listable' / IN_LISTABLE}: cannot read: Permission denied",
    ]
    if command == "report":
        assert [row["path"] for row in json.loads(out)["files"]] == [str(tree / "readable" / READABLE)]


@needs_root
def test_a_named_file_in_a_directory_this_user_cannot_search_is_one_line(tree: Path) -> None:
    hidden, readable = tree / "private" / IN_PRIVATE, tree / "readable" / READABLE
    code, out, err = _as_nobody("report", str(hidden), str(readable), "--format", "json")

    assert code == 4, err
    assert err.splitlines() == [f"error: {hidden}: cannot read: Permission denied"]
    assert [row["path"] for row in json.loads(out)["files"]] == [str(readable)]


@needs_root
def test_the_cache_is_used_only_where_no_other_user_can_swap_it(tree: Path) -> None:
    """A home below a directory another user owns (here world-writable, as a shared scratch directory is) could
    have its cache directory swapped, after the check, for a cache that user wrote: the cache is not used there.
    Below a sticky directory (as /tmp is), or in a directory of the user's own, it is."""
    theirs = tree / "theirs"
    theirs.mkdir()
    os.chown(theirs, ANOTHER, ANOTHER)
    os.chmod(theirs, 0o777)
    mine = tree / "mine"
    mine.mkdir(mode=0o700)
    os.chown(mine, NOBODY, NOBODY)
    sticky = tree / "locks"  # root's, mode 1777
    readable = str(tree / "readable")

    for home, used in ((theirs / "home", False), (mine / "home", True), (sticky / "home", True)):
        code, out, err = _as_nobody("report", readable, "--format", "json", home=str(home))
        assert code == 0 and json.loads(out)["totals"]["files"] == 1, err
        stored = list((home / "cache" / "report").glob("*/sets/*.state"))
        assert bool(stored) == used, home


@needs_root
@pytest.mark.parametrize("option", ["--aoe-ini", "--facts"])
def test_preflight_refuses_a_file_this_user_cannot_read_as_bad_input(option: str) -> None:
    """Not click's exit-2 "is not readable": a file that cannot be read is bad input (exit 4), as a missing one is."""
    top = make_shared_tree()
    try:
        secret = top / "secret"
        secret.write_text("[COMMON]\nTUNING_PARALLEL_NUM = 4\n")
        os.chmod(secret, 0o600)
        code, _, err = _as_nobody("preflight", option, str(secret))
    finally:
        shutil.rmtree(top)
    where = f"--aoe-ini {secret}" if option == "--aoe-ini" else str(secret)
    assert (code, err) == (4, f"error: {where}: cannot read: Permission denied\n")
