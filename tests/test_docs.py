"""README and docs/ document every command, option and exit code, README stays short, every relative link resolves,
and every example is real output (sqlite-utils' test_docs idea)."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer

from aoe_runner.cli.main import app
from aoe_runner.errors import ExitCode
from tests.conftest import ROOT

README_PATH = ROOT / "README.md"
DOCS = ROOT / "docs"
DOC_PATHS = [README_PATH, *sorted(DOCS.rglob("*.md"))]
README = README_PATH.read_text(encoding="utf-8")
REFERENCE = (DOCS / "reference.md").read_text(encoding="utf-8")
WALKTHROUGH = DOCS / "guide" / "walkthrough.md"
COMMAND = typer.main.get_command(app)
MAX_README_LINES = 250


def _commands(group: Any, prefix: str = "aoe-runner") -> dict[str, Any]:
    """Every command by its full name, subcommands included (`aoe-runner runs list`)."""
    found: dict[str, Any] = {}
    for name, command in getattr(group, "commands", {}).items():
        found[f"{prefix} {name}"] = command
        found.update(_commands(command, f"{prefix} {name}"))
    return found


COMMANDS = _commands(COMMAND)
LEAVES = {name: command for name, command in COMMANDS.items() if not getattr(command, "commands", None)}


def _long_options(command: Any) -> set[str]:
    return {opt for param in command.params for opt in param.opts if opt.startswith("--") and opt != "--help"}


# Fenced blocks of every page, with the prose before each


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    before: str  # the prose between the previous block (or the page's start) and this one

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def command(self) -> str | None:
        """`aoe-runner ...` when the block is a text block that shows a command and its output."""
        first = self.text.split("\n", 1)[0]
        return first[2:] if self.lang == "text" and first.startswith("$ aoe-runner ") else None


def _blocks(path: Path) -> list[Block]:
    blocks: list[Block] = []
    prose: list[str] = []
    fence: tuple[int, str, list[str]] | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if fence is None and line.startswith("```"):
            fence = (number, line[3:].strip(), [])
        elif fence is not None and line.startswith("```"):
            blocks.append(Block(path, fence[0], fence[1], "".join(f"{text}\n" for text in fence[2]), "\n".join(prose)))
            fence, prose = None, []
        elif fence is not None:
            fence[2].append(line)
        else:
            prose.append(line)
    return blocks


BLOCKS = {path: _blocks(path) for path in DOC_PATHS}


def _prose(path: Path) -> str:
    """The page without its fenced blocks."""
    return "\n".join(block.before for block in BLOCKS[path]) + "\n" + path.read_text(encoding="utf-8").rsplit("```", 1)[-1]


# Commands, options and exit codes


@pytest.mark.parametrize("name", sorted(LEAVES))
def test_every_command_has_a_row_in_readme_and_a_place_in_the_docs(name: str) -> None:
    assert re.search(rf"^\| `{re.escape(name)}` \|", README, re.MULTILINE), f"README's command table lacks {name}"
    assert any(name in path.read_text(encoding="utf-8") for path in DOC_PATHS if path.is_relative_to(DOCS / "guide"))
    assert f"### `{name}`\n" in REFERENCE


def test_readme_has_a_row_for_report_diff() -> None:
    assert "| `aoe-runner report --diff` |" in README


def _reference_section(name: str) -> str:
    return REFERENCE.split(f"### `{name}`\n", 1)[1].split("\n#", 1)[0]


@pytest.mark.parametrize(
    ("name", "option"),
    sorted(
        [(name, option) for name, command in COMMANDS.items() for option in _long_options(command)]
        + [("aoe-runner", option) for option in _long_options(COMMAND)]
    ),
)
def test_every_option_is_in_the_reference_under_its_command(name: str, option: str) -> None:
    assert re.search(rf"^\| `{re.escape(option)}[` ]", _reference_section(name), re.MULTILINE)


@pytest.mark.parametrize("code", list(ExitCode), ids=lambda c: c.name)
def test_every_exit_code_is_in_readmes_table(code: ExitCode) -> None:
    table = README.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    assert re.search(rf"^\| {code.value} \|", table, re.MULTILINE)
    assert re.search(rf"^\| {code.value} \|", REFERENCE.split("\n## Exit codes\n", 1)[1], re.MULTILINE)


# README: short, in its order, opening with the two commands


def test_readme_is_short() -> None:
    assert len(README.splitlines()) <= MAX_README_LINES


def test_readme_opens_with_the_two_commands() -> None:
    block = README.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert block == ["pip install . && aoe-runner report sample_results/", "pip install -e '.[test,ray]' && python -m pytest"]


def test_readme_sections_come_in_order() -> None:
    headings = re.findall(r"^## (.+)$", _prose(README_PATH), re.MULTILINE)
    assert headings == ["Quick start", "Commands", "Exit codes", "Tests", "Documentation"]


def test_readme_says_how_to_run_the_tests() -> None:
    section = README.split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    assert 'python -m pytest -m "not slow"' in section and "python -m pytest " in section
    assert all(word in section for word in ("postgresql", "chromium", ".ci/run"))


# Links


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", _prose(path), re.MULTILINE):
        slug = _slug(heading)
        anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _links(path: Path) -> list[str]:
    prose = re.sub(r"`[^`\n]*`", "", _prose(path))  # a link's text may be code; code is never a link
    return re.findall(r"\]\(([^)\s]+)\)", prose)


LINKS = [(path, target) for path in DOC_PATHS for target in _links(path) if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize(("path", "target"), LINKS, ids=[f"{p.relative_to(ROOT)}->{t}" for p, t in LINKS])
def test_every_relative_link_points_to_a_file_that_exists(path: Path, target: str) -> None:
    file, _, anchor = target.partition("#")
    linked = (path.parent / file).resolve() if file else path
    assert linked.exists(), f"{path.relative_to(ROOT)} links to {target}, which does not exist"
    if anchor and linked.suffix == ".md":
        assert anchor in _anchors(linked), f"{path.relative_to(ROOT)} links to #{anchor}, not a heading of {file or 'itself'}"


def test_the_docs_have_links_to_check() -> None:
    assert len(LINKS) > 50 and any(target.startswith("docs/guide/") for path, target in LINKS if path == README_PATH)


# Real output: every `$ aoe-runner report|validate|preflight ...` block, rerun


RERUN = ("report", "validate", "preflight")
EXAMPLES = [block for blocks in BLOCKS.values() for block in blocks if block.command]
RERUNNABLE = [block for block in EXAMPLES if shlex.split(block.command or "")[1] in RERUN]


def _stderr_block(example: Block) -> Block | None:
    """The text block right after an example, when the prose between them says it is the command's stderr."""
    blocks = BLOCKS[example.path]
    following = blocks[blocks.index(example) + 1 :][:1]
    if following and following[0].lang == "text" and not following[0].command and "stderr" in following[0].before:
        return following[0]
    return None


def _why_not_rerun(argv: list[str]) -> str | None:
    """Why an example's output cannot be had again here, or None when it can."""
    paths = [word for word in argv[1:] if not word.startswith("-")]
    if argv[0] == "report" and ("--run" in argv or ("--diff" in argv and len(paths) < 2)):
        return "reads the recorded runs of the walkthrough: test_the_walkthrough_is_real_output checks it"
    if argv[0] == "preflight" and "--facts" not in argv:
        return "measures this host, which differs from the one it was written on"
    if {"-o", "--output", "--save-facts"} & set(argv):
        return "writes a file"
    return None


@pytest.mark.parametrize("example", RERUNNABLE, ids=[block.where for block in RERUNNABLE])
def test_every_example_of_report_validate_and_preflight_is_real_output(example: Block, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    argv = shlex.split(example.command or "")[1:]
    why = _why_not_rerun(argv)
    if why:
        pytest.skip(f"{example.where}: `{example.command}` {why}")
    monkeypatch.chdir(ROOT)
    width = re.findall(r"(\d+) columns wide", example.before)
    if width:
        monkeypatch.setenv("COLUMNS", width[-1])
    else:
        monkeypatch.delenv("COLUMNS", raising=False)  # piped: full lines
    result = cli(*argv)
    _update(example, f"$ {example.command}\n{result.out}")
    assert example.text == f"$ {example.command}\n{result.out}", example.where
    stderr = _stderr_block(example)
    if stderr is not None:
        assert stderr.text == result.err, stderr.where


def test_the_examples_everyone_reads_are_rerun() -> None:
    """Moving a page must not make its examples drop out of the check."""
    rerun = {block.command for block in RERUNNABLE if not _why_not_rerun(shlex.split(block.command or "")[1:])}
    assert {
        "aoe-runner report sample_results/",
        "aoe-runner report --diff sample_results/training_opat sample_results/retune",
        "aoe-runner validate tests/data/odd_records",
        "aoe-runner preflight --facts tests/data/facts/small-2c.json --model-memory 4GiB",
    } <= rerun
    assert any(_stderr_block(block) for block in RERUNNABLE if block.command == "aoe-runner report sample_results/")


# Real output: the walkthrough, README's quick start and verify's example, run on a scratch home


def _quick_start_blocks() -> list[Block]:
    """README's examples between `## Quick start` and the next section."""
    lines = README.splitlines()
    start = lines.index("## Quick start")
    end = next(
        number for number, line in enumerate(lines) if number > start and line.startswith("## ") and line != "## Quick start"
    )
    return [block for block in BLOCKS[README_PATH] if block.command and start < block.line <= end]


def test_every_other_example_is_checked_by_a_test_that_runs_it() -> None:
    from tests.tune.walkthrough import QUICK_START_STEPS, STEPS
    from tests.verify.test_verify_guide import COMMAND as VERIFY_EXAMPLE
    from tests.verify.test_verify_guide import PAGE as VERIFY_PAGE

    walkthrough = [block.command for block in BLOCKS[WALKTHROUGH] if block.lang == "text"]
    assert walkthrough == list(STEPS)
    assert [block.command for block in _quick_start_blocks()] == list(QUICK_START_STEPS)
    checked = {(WALKTHROUGH, step) for step in STEPS} | {(README_PATH, step) for step in QUICK_START_STEPS}
    checked.add((VERIFY_PAGE, VERIFY_EXAMPLE))
    unchecked = [block.where for block in EXAMPLES if block not in RERUNNABLE and (block.path, block.command) not in checked]
    assert unchecked == [], "examples no test reruns"


def test_the_walkthrough_is_real_output() -> None:
    """The walkthrough's tune → runs → report → diff → restore → verify blocks against a fresh run of the same commands.

    tune's own lines may interleave with the script's differently from run to run, and preflight's lines
    depend on the host, so those blocks are compared as sets of lines without the preflight warnings. Table
    padding is ignored everywhere (see _loose).
    """
    from tests.tune.walkthrough import run_walkthrough

    blocks = [block for block in BLOCKS[WALKTHROUGH] if block.lang == "text"]
    documented = [block.text for block in blocks]
    real = run_walkthrough()
    assert len(documented) == len(real)
    for block, fresh in zip(blocks, real, strict=True):
        if not block.text.startswith(("$ aoe-runner tune", "$ aoe-runner verify")):  # lines in another order; noise
            _update(block, fresh)
    for shown, fresh in zip(documented, real, strict=True):
        if shown.startswith("$ aoe-runner tune"):
            assert _without_preflight(_numbers_masked(shown)) <= _without_preflight(_numbers_masked(fresh)), fresh
        elif shown.startswith("$ aoe-runner verify"):  # step times are noisy by design: same shape, other numbers
            assert _loose(_numbers_masked(shown)) == _loose(_numbers_masked(fresh))
        else:
            assert _loose(shown) == _loose(fresh)


def test_readmes_quick_start_is_real_output() -> None:
    """README's tune and verify of its own train.py, run afresh.

    tune's block shows the script's first lines and its last, with `...` between; preflight's lines depend on the
    host. verify's figures and so its verdict are noise here (both banks are empty): they are masked.
    """
    from tests.tune.walkthrough import run_quick_start

    shown_tune, shown_verify = (block.text for block in _quick_start_blocks())
    fresh_tune, fresh_verify = run_quick_start()
    shown_lines = _without_preflight(_numbers_masked(shown_tune)) - {"..."}
    assert shown_lines <= _without_preflight(_numbers_masked(fresh_tune)), fresh_tune
    assert fresh_tune.rstrip("\n").endswith(shown_tune.rstrip("\n").rsplit("\n", 1)[1])
    assert _loose(_noise_masked(shown_verify)) == _loose(_noise_masked(fresh_verify)), fresh_verify


def _update(block: Block, fresh: str) -> None:
    """With AOE_RUNNER_UPDATE_DOCS=1, write fresh output in place of the block (then review the change, and commit it
    on its own)."""
    if os.environ.get("AOE_RUNNER_UPDATE_DOCS") != "1" or block.text == fresh:
        return
    text = block.path.read_text(encoding="utf-8")
    assert block.text in text, f"{block.where} changed since the docs were read"
    block.path.write_text(text.replace(block.text, fresh, 1), encoding="utf-8")


def _numbers_masked(block: str) -> str:
    return re.sub(r"\d+\.\d+", "N", block)


def _noise_masked(block: str) -> str:
    """Signed decimals and the verdict's explanation, which step-time noise decides."""
    return re.sub(r"^verdict: .*$", "verdict: V", re.sub(r"[+-]?\d+\.\d+", "N", block), flags=re.MULTILINE)


def _loose(block: str) -> str:
    """Table padding follows the real paths' length, which normalising changes: compare without it."""
    return re.sub(r" +", " ", re.sub(r"-{3,}", "---", block))


def _without_preflight(block: str) -> set[str]:
    return {line for line in block.splitlines() if not line.startswith(("warning: preflight", "warning: running anyway"))}
