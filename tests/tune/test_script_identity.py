"""Which script a run ran: its path, hash and git state, read by a real git in real repositories."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aoe_runner.common.proc import Completed, Started
from aoe_runner.tune.record import ScriptIdentity
from tests.conftest import ROOT
from tests.tune.runner import pid_when_written, wait_until_gone

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]


def _git(repository: Path, *arguments: str) -> str:
    done = subprocess.run([*GIT, "-C", str(repository), *arguments], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    _git(root, "init", "-q")
    (root / "scripts" / "train.py").write_text("print('step')\n")
    (root / "other.py").write_text("x = 1\n")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "first")
    return root


def _fields(script: Path) -> dict[str, object]:
    with ScriptIdentity(script) as identity:
        return identity.fields()


def test_a_committed_script_has_its_commit_and_is_not_modified(repository: Path) -> None:
    script = repository / "scripts" / "train.py"
    fields = _fields(script)
    assert fields == {
        "script": str(script.resolve()),
        "script_sha256": hashlib.sha256(script.read_bytes()).hexdigest(),
        "git_commit": _git(repository, "rev-parse", "HEAD"),
        "git_script_modified": False,
    }


def test_an_edited_script_is_modified_but_an_edit_elsewhere_is_not_its_own(repository: Path) -> None:
    (repository / "other.py").write_text("x = 2\n")
    assert _fields(repository / "scripts" / "train.py")["git_script_modified"] is False
    (repository / "scripts" / "train.py").write_text("print('changed')\n")
    assert _fields(repository / "scripts" / "train.py")["git_script_modified"] is True


def test_an_untracked_script_is_modified(repository: Path) -> None:
    new = repository / "scripts" / "new.py"
    new.write_text("print(1)\n")
    fields = _fields(new)
    assert fields["git_commit"] == _git(repository, "rev-parse", "HEAD")
    assert fields["git_script_modified"] is True


def test_a_script_name_is_no_pattern(repository: Path) -> None:
    patterned, lookalike = repository / "scripts" / "t[1].py", repository / "scripts" / "t1.py"
    patterned.write_text("print(1)\n")
    lookalike.write_text("print(1)\n")
    _git(repository, "add", ".")
    _git(repository, "commit", "-q", "-m", "two")
    lookalike.write_text("print(2)\n")
    assert _fields(patterned)["git_script_modified"] is False
    assert _fields(lookalike)["git_script_modified"] is True


def test_an_ignored_or_hidden_untracked_script_is_modified(repository: Path) -> None:
    ignored = repository / "scripts" / "local.py"
    ignored.write_text("print(1)\n")
    (repository / ".git" / "info" / "exclude").write_text("local.py\n")
    assert _fields(ignored)["git_script_modified"] is True
    hidden = repository / "scripts" / "new.py"
    hidden.write_text("print(1)\n")
    _git(repository, "config", "status.showUntrackedFiles", "no")
    assert _fields(hidden)["git_script_modified"] is True
    assert _fields(repository / "scripts" / "train.py")["git_script_modified"] is False


def test_a_symlinked_script_is_read_where_it_lives(repository: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.py"
    link.symlink_to(repository / "scripts" / "train.py")
    fields = _fields(link)
    assert fields["script"] == str(repository / "scripts" / "train.py")
    assert fields["git_commit"] == _git(repository, "rev-parse", "HEAD")
    assert fields["git_script_modified"] is False


def test_outside_a_repository_or_before_the_first_commit_there_is_no_git_state(tmp_path: Path) -> None:
    loose = tmp_path / "loose" / "train.py"
    loose.parent.mkdir()
    loose.write_text("print(1)\n")
    assert _fields(loose)["git_commit"] is None
    assert _fields(loose)["git_script_modified"] is None
    _git(loose.parent, "init", "-q")
    assert (_fields(loose)["git_commit"], _fields(loose)["git_script_modified"]) == (None, None)


def test_without_git_on_path_there_is_no_git_state(repository: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repository / "no-such-bin"))
    fields = _fields(repository / "scripts" / "train.py")
    assert (fields["git_commit"], fields["git_script_modified"]) == (None, None)


def test_a_started_command_is_bounded_from_its_start_and_killed_with_its_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    command = ["sh", "-c", f"sleep 30 & echo $! > {pid_file}; wait"]
    started = time.monotonic()
    with Started(command, timeout_s=0.5) as running:
        time.sleep(0.4)  # the limit counts from the start: little is left when finish() is called
        done = running.finish()
    assert time.monotonic() - started < 5
    assert done.exit_code is None and done.error == "sh did not finish within 0.5 s"
    assert running.finish() is done
    assert wait_until_gone([pid_when_written(pid_file)], 5) == []


def test_a_command_that_ended_is_collected_even_past_its_limit() -> None:
    running = Started(["echo", "done"], timeout_s=0.2)
    time.sleep(0.4)  # e.g. a slow preflight: the limit has passed, but echo ended long ago
    assert running.finish() == Completed(0, "done\n")


def test_a_grandchild_that_escapes_the_group_with_the_pipe_cannot_hold_the_caller(tmp_path: Path) -> None:
    pid_file = tmp_path / "escaped.pid"
    started = time.monotonic()
    done = Started(["sh", "-c", f"setsid sleep 30 & echo $! > {pid_file}; exit 0"], timeout_s=0.5).finish()
    try:
        assert done.exit_code is None and time.monotonic() - started < 5
    finally:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_ctrl_c_while_a_bounded_command_runs_kills_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    code = (
        "import sys; from aoe_runner.common.proc import run_bounded\n"
        f"run_bounded(['sh', '-c', 'echo $$ > {pid_file}; exec sleep 30'], 60)\n"
    )
    caller = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stderr=subprocess.DEVNULL)
    pid = pid_when_written(pid_file)
    caller.send_signal(signal.SIGINT)
    caller.wait(timeout=10)
    assert wait_until_gone([pid], 5) == []


def test_a_started_command_never_collected_is_killed_on_leaving(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    with Started(["sh", "-c", f"sleep 30 & echo $! > {pid_file}; wait"], timeout_s=60):
        pid = pid_when_written(pid_file)
    assert wait_until_gone([pid], 5) == []
