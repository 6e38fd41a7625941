"""README must document every command, every option and every exit code (sqlite-utils' test_docs idea)."""

from __future__ import annotations

import re

import pytest
import typer

from aoe_runner.cli import app
from aoe_runner.errors import ExitCode
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMAND = typer.main.get_command(app)


@pytest.mark.parametrize("name", sorted(COMMAND.commands))  # type: ignore[attr-defined]
def test_every_command_is_documented(name: str) -> None:
    assert f"aoe-runner {name}" in README


@pytest.mark.parametrize(
    "option",
    sorted(
        opt
        for command in COMMAND.commands.values()  # type: ignore[attr-defined]
        for param in command.params
        for opt in param.opts
        if opt.startswith("--") and opt != "--help"
    ),
)
def test_every_option_is_documented(option: str) -> None:
    assert f"`{option}" in README


@pytest.mark.parametrize("code", list(ExitCode), ids=lambda c: c.name)
def test_every_exit_code_is_in_the_table(code: ExitCode) -> None:
    assert re.search(rf"^\| {code.value} \|", README, re.MULTILINE)


def test_readme_opens_with_the_two_commands() -> None:
    block = README.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert block == ["pip install . && aoe-runner report sample_results/", "pip install -e '.[test]' && python -m pytest"]


def _block_after(marker: str) -> str:
    return README.split(marker, 1)[1].split("```text\n", 1)[1].split("```", 1)[0]


def test_readme_shows_the_real_report_output(cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(ROOT)
    assert _block_after("On the shipped samples") == cli("report", "sample_results/").out
    diff = cli("report", "--diff", "sample_results/training_opat", "sample_results/retune").out
    assert _block_after("### `aoe-runner report --diff OLD NEW`") == (
        "$ aoe-runner report --diff sample_results/training_opat sample_results/retune\n" + diff
    )


def test_readme_shows_the_real_preflight_output(cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(ROOT)
    command = "aoe-runner preflight --facts tests/data/facts/small-2c.json --model-memory 4GiB"
    out = cli(*command.split()[1:]).out
    assert _block_after("## `aoe-runner preflight`") == f"$ {command}\n{out}"
