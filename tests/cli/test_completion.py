"""Completion knows values, not only names: formats, modes, kinds, statuses, and the run ids of the history."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.tune.runner import Home, tune


def _complete(words: str, env: dict[str, str] | None = None) -> list[str]:
    """What bash is offered for the last word of `words` (click's completion protocol, as the script asks it)."""
    typed = words.split(" ")
    environment = {**os.environ, **(env or {}), "_AOE_RUNNER_COMPLETE": "complete_bash", "COMP_WORDS": words,
                   "COMP_CWORD": str(len(typed) - 1)}  # fmt: skip
    answer = subprocess.run([sys.executable, "-m", "aoe_runner"], capture_output=True, text=True, env=environment, timeout=60)
    assert answer.returncode == 0, answer.stderr
    return answer.stdout.split()


@pytest.mark.parametrize(
    ("words", "offered"),
    [
        ("aoe-runner report --format j", ["json"]),
        ("aoe-runner report --format ", ["table", "json", "csv", "markdown", "html"]),
        ("aoe-runner validate --format m", []),  # validate writes no markdown
        ("aoe-runner tune train.py --mode s", ["subgraph"]),
        ("aoe-runner runs list --kind ", ["tune", "verify"]),
        ("aoe-runner runs list --status f", ["failed"]),
        ("aoe-runner completion z", ["zsh"]),
    ],
)
def test_choices_are_completed(words: str, offered: list[str]) -> None:
    assert _complete(words) == offered


def test_run_ids_are_completed_from_the_history(tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = Home(tmp_path)
    code, _, err = tune(home, "exit", "0")
    assert code == 0, err
    run_id = home.only_manifest()["id"]
    assert _complete("aoe-runner runs show ", home.env) == ["latest", run_id]
    assert _complete(f"aoe-runner bank restore {run_id[:10]}", home.env) == [run_id]
    assert _complete("aoe-runner runs show ", {**home.env, "AOE_RUNNER_HOME": str(tmp_path / "nothing")}) == ["latest"]
