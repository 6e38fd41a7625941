"""Every command's --help reads as a person types the command: plain metavars, ranges in words, nothing cut off."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer

from aoe_runner.cli.app import application
from aoe_runner.cli.click_glue import MAY_BE_EMPTY, command_tree
from aoe_runner.cli.main import app

COMMAND = typer.main.get_command(app)


def _paths(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    for name, command in getattr(group, "commands", {}).items():
        found += _paths(command, (*prefix, name))
    return found


PATHS = _paths(COMMAND)
BAD = {
    "a type in angle brackets": re.compile(r"<(?:list\[|str>|path>|int>|text>|integer>|float>|bool>)"),
    "braces around a required argument": re.compile(r"\{[A-Z]+\}"),
    "a range as x>= / x<=": re.compile(r"x\s*[<>]=|[<>]=\s*x"),
    "a description cut off with ...": re.compile(r"[a-z,]\.\.\.$", re.MULTILINE),
    "pydantic or typer internals": re.compile(r"Value error|Input should be"),
}


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "aoe-runner")
def test_help_reads_cleanly(cli, path: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    result = cli(*path, "--help")
    assert result.code == 0 and result.err == ""
    assert result.out.startswith(f"Usage: aoe-runner {' '.join(path)}".rstrip() + " ")
    for what, pattern in BAD.items():
        assert not pattern.search(result.out), f"{what} in:\n{result.out}"


def test_usage_lines_show_arguments_as_typed(cli) -> None:  # type: ignore[no-untyped-def]
    assert "Usage: aoe-runner validate [OPTIONS] [PATH]...\n" in cli("validate", "--help").out
    assert "Usage: aoe-runner tune [OPTIONS] [SCRIPT] [-- ARGS...]\n" in cli("tune", "--help").out
    assert "Usage: aoe-runner runs show [OPTIONS] [RUN]\n" in cli("runs", "show", "--help").out
    assert "Usage: aoe-runner runs rm [OPTIONS] RUN...\n" in cli("runs", "rm", "--help").out
    assert re.search(r"--repeats N +Runs per arm.*\[default: 3; at least 1\]", " ".join(cli("verify", "--help").out.split()))


def test_mode_help_names_every_accepted_value(cli) -> None:  # type: ignore[no-untyped-def]
    for command in (("preflight",), ("tune",)):
        text = " ".join(cli(*command, "--help").out.split())
        line = text.split("--mode MODE", 1)[1].split(" --", 1)[0]
        for value in ("op", "subgraph", "2", "1", "opat", "sgat"):
            assert re.search(rf"\b{value}\b", line), (command, line)


def test_the_command_list_shows_whole_sentences(cli) -> None:  # type: ignore[no-untyped-def]
    out = cli("--help").out
    assert "report      Summarise result files or recorded runs into the bank they imply\n" in out
    assert "completion  Print the shell-completion script for bash, zsh or fish\n" in out


def test_help_loads_no_heavy_module() -> None:
    """`aoe-runner --help` stays within its start-up target: no models, tables, schemas or process tools."""
    import subprocess
    import sys

    code = "import sys; from aoe_runner.__main__ import main; main(); print(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, check=True)
    loaded = set(result.stdout.splitlines()[-1].split())
    heavy = {"pydantic", "tabulate", "jsonschema", "msgspec", "psutil", "aoe_runner.report.models", "aoe_runner.render.width"}
    assert not heavy & loaded, sorted(heavy & loaded)


@pytest.mark.parametrize("path", [p for p in PATHS if p], ids=" ".join)
def test_a_named_command_builds_only_its_branch_and_the_same_command(path: tuple[str, ...]) -> None:
    """cli.run imports and builds only the branch that the arguments name (start-up); it equals the whole tree's."""
    narrowed, whole = command_tree(application, [*path, "--flag"]), COMMAND
    for name in path:
        assert list(narrowed.commands) == [name]
        narrowed, whole = narrowed.commands[name], whole.commands[name]
    assert _shape(narrowed) == _shape(whole)


def _shape(command: Any) -> tuple[Any, ...]:
    params = [(p.name, p.opts, p.default, p.required, getattr(p, "help", None)) for p in command.params]
    return type(command), command.help, params, sorted(getattr(command, "commands", {}))


@pytest.mark.parametrize("arguments", [[], ["--help"], ["--store", "x", "runs"], ["no-such-command"], ["runs", "no-such"]])
def test_anything_but_a_command_name_gets_the_whole_tree(arguments: list[str]) -> None:
    """Or, for a group (after any root options) with no command of its own named, the whole group."""
    tree = command_tree(application, arguments, ("--store", "--color"))
    if "runs" in arguments:
        tree = tree.commands["runs"]
        whole = COMMAND.commands["runs"]
    else:
        whole = COMMAND
    assert sorted(tree.commands) == sorted(whole.commands)


COMMAND_MODULES = {
    f"aoe_runner.cli.{name}" for name in ("report", "validate", "preflight", "tune", "verify", "runs", "bank", "store")
}
HEAVY = {"pydantic", "tabulate", "jsonschema", "jsonschema_rs", "msgspec", "wcwidth", "psycopg", "plotly", "psutil"}


@pytest.mark.parametrize(
    ("argv", "module", "needs"),
    [
        (["report", "sample_results/training_opat"], "report", {"msgspec"}),  # plain training files: no models
        (["preflight"], "preflight", set()),  # memory from /proc/meminfo, not psutil
        (["runs", "list"], "runs", set()),
        (["validate", "sample_results"], "validate", {"jsonschema_rs", "msgspec"}),  # jsonschema words invalid files only
        (["validate", "tests/data/bad/aoe_result_opat_object.json"], "validate", {"jsonschema", "jsonschema_rs", "msgspec"}),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_a_command_imports_only_what_its_path_needs(tmp_path, argv: list[str], module: str, needs: set[str]) -> None:  # type: ignore[no-untyped-def]
    """Its own command module, no other's, and of the heavy libraries only those it uses (issue 41's start-up)."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = "import sys\nfrom aoe_runner.cli.main import run\nrun(sys.argv[1:])\nprint(' '.join(sorted(sys.modules)), file=sys.stderr)"
    env = {**os.environ, "AOE_RUNNER_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    loaded = set(done.stderr.splitlines()[-1].split())
    assert loaded & COMMAND_MODULES == {f"aoe_runner.cli.{module}"}
    assert {name for name in loaded if name in HEAVY} == needs


def _text_parameters() -> list[tuple[tuple[str, ...], Any]]:
    """Every parameter that takes a path or a string, of every command, but those an empty value may be given to."""
    found = []
    for path in PATHS:
        command: Any = COMMAND
        for name in path:
            command = command.commands[name]
        for param in command.params:
            if type(param.type).__name__ in ("TyperPath", "StringParamType") and param.name not in MAY_BE_EMPTY:
                found.append((path, param))
    return found


TEXT_PARAMETERS = _text_parameters()


@pytest.mark.parametrize(
    ("path", "param"), TEXT_PARAMETERS, ids=[" ".join(path) + " " + param.name for path, param in TEXT_PARAMETERS]
)
def test_an_empty_value_is_refused_never_read_as_all_or_here(cli, path: tuple[str, ...], param: Any) -> None:  # type: ignore[no-untyped-def]
    """pathlib reads "" as ".": `bank pull NAME --to $UNSET` moved the working directory aside and linked it to the
    bank; `runs prune --script '' --yes` removed every run, the empty filter dropped. Every path and text a command
    takes refuses an empty or blank value, as a usage error, before anything runs."""
    given = [param.opts[0], " "] if param.param_type_name == "option" else [""]
    result = cli(*path, *given, *(() if path else ("runs", "list")))  # a root option, before a command
    what = "path" if type(param.type).__name__ == "TyperPath" else "value"
    assert result.code == 2 and f"an empty {what} names nothing" in result.err, result.err


def test_every_path_and_text_parameter_is_checked_for_emptiness() -> None:
    kinds = {type(param.type).__name__ for _, param in TEXT_PARAMETERS}
    assert kinds == {"TyperPath", "StringParamType"} and len(TEXT_PARAMETERS) > 60, len(TEXT_PARAMETERS)
