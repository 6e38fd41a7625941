"""A result file is one file, however it is reached: globs never go through a link to a directory, and several
spellings, links or arguments of one file count it once (issue 42, finding 3). Through the real CLI too: the
summary's counts are those of one file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from aoe_runner.results.files import find_result_files
from tests.common.locks.users import NOBODY, as_user, make_shared_tree, needs_root
from tests.conftest import SAMPLES

ONE = SAMPLES / "training_opat" / "aoe_result_opat_20260310142233517_41237.json"


def _tree(tmp_path: Path) -> Path:
    top = tmp_path / "results"
    (top / "sub").mkdir(parents=True)
    shutil.copy(ONE, top / "sub" / ONE.name)
    return top


def test_a_glob_does_not_follow_a_link_to_a_directory(tmp_path: Path) -> None:
    top = _tree(tmp_path)
    (top / "self").symlink_to(".")
    (top / "sub" / "up").symlink_to("..")  # two loops: glob.glob would never end
    files, errors = find_result_files([str(top / "**" / "aoe_result_*.json")])
    assert errors == [] and files == [top / "sub" / ONE.name]


def test_one_file_under_several_spellings_and_links_is_found_once(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    top = _tree(tmp_path)
    monkeypatch.chdir(top)
    os.link(top / "sub" / ONE.name, top / "aoe_result_opat_hardlink.json")
    (top / "aoe_result_opat_symlink.json").symlink_to(top / "sub" / ONE.name)
    spellings = [f"sub/{ONE.name}", str(top / "sub" / ONE.name), f"sub/../sub/{ONE.name}", f"./sub/{ONE.name}"]
    files, errors = find_result_files([*spellings, "aoe_result_opat_hardlink.json", "aoe_result_opat_symlink.json", "."])
    assert errors == [] and files == [Path(f"sub/{ONE.name}")]


def test_the_summary_counts_the_file_once(tmp_path: Path) -> None:
    top = _tree(tmp_path)
    (top / "self").symlink_to(".")
    env = {**os.environ, "AOE_RUNNER_HOME": str(tmp_path / "home")}

    def summary(*arguments: str) -> dict:  # type: ignore[type-arg]
        done = subprocess.run(
            [sys.executable, "-m", "aoe_runner", "report", *arguments, "--format", "json"],
            capture_output=True, text=True, env=env, cwd=top, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    once = summary(str(top / "sub" / ONE.name))
    many = summary(str(top / "**" / "aoe_result_*.json"), f"sub/{ONE.name}", f"self/self/sub/{ONE.name}")
    assert many["totals"] == once["totals"] and many["operators"] == once["operators"]


FIND_AS_ANOTHER_USER = """
import sys
from aoe_runner.results.files import find_result_files
files, errors = find_result_files([sys.argv[1]])
print(len(files), [(error.where, error.reason) for error in errors])
"""


@needs_root
def test_a_glob_says_which_directory_it_could_not_search() -> None:
    shared = make_shared_tree()  # under /tmp, where another user can reach it
    try:
        top = _tree(shared)
        (top / "locked").mkdir(mode=0o000)
        for directory in (top, top / "sub"):
            directory.chmod(0o755)
        (top / "sub" / ONE.name).chmod(0o644)
        out, err = as_user(NOBODY, FIND_AS_ANOTHER_USER, str(top / "**" / "aoe_result_*.json")).communicate(timeout=60)
        assert out.strip() == f"1 [({str(top / 'locked')!r}, 'cannot search: Permission denied')]", err
    finally:
        shutil.rmtree(shared)
