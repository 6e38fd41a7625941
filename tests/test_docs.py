"""README must document every command, every option and every exit code (sqlite-utils' test_docs idea)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer

from aoe_runner.cli.main import app
from aoe_runner.errors import ExitCode
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMAND = typer.main.get_command(app)


def _commands(group: Any, prefix: str = "aoe-runner") -> dict[str, Any]:
    """Every command by its full name, subcommands included (`aoe-runner runs list`)."""
    found: dict[str, Any] = {}
    for name, command in getattr(group, "commands", {}).items():
        found[f"{prefix} {name}"] = command
        found.update(_commands(command, f"{prefix} {name}"))
    return found


COMMANDS = _commands(COMMAND)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_is_documented(name: str) -> None:
    assert name in README


@pytest.mark.parametrize(
    "option",
    sorted(
        {
            opt
            for command in COMMANDS.values()
            for param in command.params
            for opt in param.opts
            if opt.startswith("--") and opt != "--help"
        }
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
    monkeypatch.delenv("COLUMNS", raising=False)  # piped: full lines
    assert _block_after("On the shipped samples") == cli("report", "sample_results/").out
    diff = cli("report", "--diff", "sample_results/training_opat", "sample_results/retune").out
    assert _block_after("### `aoe-runner report --diff OLD NEW`") == (
        "$ aoe-runner report --diff sample_results/training_opat sample_results/retune\n" + diff
    )


def test_readme_shows_the_real_preflight_output(cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "100")  # as README says: a terminal 100 columns wide
    command = "aoe-runner preflight --facts tests/data/facts/small-2c.json --model-memory 4GiB"
    out = cli(*command.split()[1:]).out
    assert _block_after("## `aoe-runner preflight`") == f"$ {command}\n{out}"


def _text_blocks_after(marker: str) -> list[str]:
    section = README.split(marker, 1)[1].split("\n## ", 1)[0]
    return [part.split("```", 1)[0] for part in section.split("```text\n")[1:]]


def test_readme_walkthrough_is_real_output() -> None:
    """README's tune → runs → report blocks against a fresh run of the same commands.

    tune's own lines may interleave with the script's differently from run to run, and preflight's lines
    depend on the host, so those blocks are compared as sets of lines without the preflight warnings. Table
    padding is ignored everywhere (see _loose).
    """
    from tests.tune.walkthrough import run_walkthrough

    documented = _text_blocks_after("### Walkthrough: preflight")
    real = run_walkthrough()
    assert len(documented) == len(real)
    for shown, fresh in zip(documented, real, strict=True):
        if shown.startswith("$ aoe-runner tune"):
            assert _without_preflight(_numbers_masked(shown)) <= _without_preflight(_numbers_masked(fresh)), fresh
        elif shown.startswith("$ aoe-runner verify"):  # step times are noisy by design: same shape, other numbers
            assert _loose(_numbers_masked(shown)) == _loose(_numbers_masked(fresh))
        else:
            assert _loose(shown) == _loose(fresh)


def _numbers_masked(block: str) -> str:
    return re.sub(r"\d+\.\d+", "N", block)


def _loose(block: str) -> str:
    """Table padding follows the real paths' length, which normalising changes: compare without it."""
    return re.sub(r" +", " ", re.sub(r"-{3,}", "---", block))


def _without_preflight(block: str) -> set[str]:
    return {line for line in block.splitlines() if not line.startswith(("warning: preflight", "warning: running anyway"))}
