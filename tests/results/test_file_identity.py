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

    once = summary(f"sub/{ONE.name}")
    many = summary(str(top / "**" / "aoe_result_*.json"), f"sub/{ONE.name}", f"self/self/sub/{ONE.name}")
    assert many["totals"] == once["totals"] and many["operators"] == once["operators"]  # named by its shortest spelling


def test_a_file_reached_by_two_names_gives_one_summary_in_any_order(tmp_path: Path) -> None:
    """The first name a file was reached by was kept, and a name can carry the file's time: `report a.json
    latest.json b.json` and `report latest.json a.json b.json` (latest.json a link to a.json) ranked a.json after
    b.json one way and before it the other, and a conflict came and went. A file named by any of its names is
    named: an empty one is exit 4 in either order."""

    def result(name: str, after: float) -> None:
        perf = {"performance_before_tune(us)": 100.0, "performance_after_tune(us)": after}
        operator = {"op_name": "conv", "op_type": "Conv2D", "tune_performance": {"Format": perf}}
        opat = {"opat_tuning_result": "tuning successful", "repo_modified_operators": [operator]}
        (tmp_path / f"aoe_result_opat_{name}_1.json").write_text(json.dumps({f"report_{name}_1": [{"OPAT": opat}]}))

    result("20260101000000000", 50.0)
    result("20260201000000000", 80.0)
    (tmp_path / "latest.json").symlink_to("aoe_result_opat_20260101000000000_1.json")
    (tmp_path / "aoe_result_opat_20260301000000000_9.json").write_bytes(b"")
    (tmp_path / "empty-link.json").symlink_to("aoe_result_opat_20260301000000000_9.json")
    env = {**os.environ, "AOE_RUNNER_HOME": str(tmp_path / "home")}

    def report(*arguments: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "aoe_runner", "report", *arguments, "--format", "csv"]
        return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False)

    a, b = "aoe_result_opat_20260101000000000_1.json", "aoe_result_opat_20260201000000000_1.json"
    one_way, other_way = report(a, "latest.json", b), report("latest.json", a, b)
    assert one_way.returncode == other_way.returncode == 0 and one_way.stdout == other_way.stdout, other_way.stdout
    assert "latest result 80 is slower than 50" in one_way.stdout
    for arguments in (("empty-link.json", a), (a, "empty-link.json"), ("empty-link.json", "."), (".", "empty-link.json")):
        refused = report(*arguments)
        assert refused.returncode == 4 and "no report in this file" in refused.stderr, (arguments, refused.stderr)


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


def test_one_problem_is_one_error_however_often_it_is_reached(tmp_path: Path) -> None:
    """`report d d` and `report 'd/**'` printed a directory's error once per way it was reached."""
    files, errors = find_result_files([str(tmp_path / "none"), str(tmp_path / "none"), str(tmp_path)])
    assert files == [] and [error.message for error in errors] == [
        f"{tmp_path / 'none'}: no such file or directory",
        f"{tmp_path}: no aoe_result_*.json or tune_result_*.json files in this directory or below it",
    ]
