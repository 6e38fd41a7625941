"""One command line: the same options, formats, words, widths, errors and interrupts everywhere."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DATA, ROOT, SAMPLES
from tests.tune.runner import Home, aoe_runner, tune

SMALL = DATA / "facts" / "small-2c.json"
DIFF = ("report", "--diff", str(SAMPLES / "training_opat"), str(SAMPLES / "retune"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Home:
    home = Home(tmp_path_factory.mktemp("conventions"))
    code, _, err = tune(home, "progress", "--reports", "1", "--interval", "0", options=("--bank", "bank"))
    assert code == 0, err
    return home


# Formats: --format everywhere, --json its alias, -o FILE everywhere


@pytest.mark.parametrize(
    "command",
    [("report", str(SAMPLES)), DIFF, ("validate", str(SAMPLES / "cann60")), ("preflight", "--facts", str(SMALL))],
    ids=["report", "diff", "validate", "preflight"],
)
def test_json_is_an_alias_of_format_json_and_o_writes_a_file(cli, tmp_path: Path, command: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    by_alias, by_format = cli(*command, "--json"), cli(*command, "--format", "JSON")
    assert by_alias.out == by_format.out and json.loads(by_alias.out)["schema_version"] >= 1
    target = tmp_path / "out.json"
    written = cli(*command, "--json", "-o", str(target))
    assert written.out == "" and target.read_text() == by_alias.out and f"wrote {target}" in written.err


@pytest.mark.parametrize(
    ("command", "formats"),
    [
        (("preflight", "--facts", str(SMALL)), ("table", "json", "markdown", "csv")),
        (("validate", str(SAMPLES / "cann60")), ("table", "json", "csv")),
        (("runs", "list"), ("table", "json", "csv", "markdown")),
    ],
)
def test_each_command_takes_the_formats_that_make_sense(cli, command: tuple[str, ...], formats: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    for name in formats:
        assert cli(*command, "--format", name).code in (0, 1), name
    refused = cli(*command, "--format", "xml")
    assert refused.code == 2 and refused.err.startswith(f"error: --format: 'xml' is not one of {', '.join(formats)} (see ")
    assert cli(*command, "--json", "--format", "csv").code == 2


def test_preflight_csv_and_markdown_have_one_row_per_check(cli) -> None:  # type: ignore[no-untyped-def]
    checks = json.loads(cli("preflight", "--facts", str(SMALL), "--json").out)["checks"]
    rows = list(csv.DictReader(io.StringIO(cli("preflight", "--facts", str(SMALL), "-f", "csv").out)))
    assert sorted(row["id"] for row in rows) == sorted(check["id"] for check in checks)
    markdown = cli("preflight", "--facts", str(SMALL), "-f", "markdown").out
    assert markdown.count("\n| FAIL ") + markdown.count("\n| WARN ") + markdown.count("\n| pass ") + markdown.count(
        "\n| skip "
    ) == len(checks)
    assert "\n| status " in markdown and "```text" in markdown


def test_validate_json_and_csv_name_every_violation(cli) -> None:  # type: ignore[no-untyped-def]
    lines = cli("validate", str(DATA / "odd_records")).out.splitlines()
    document = json.loads(cli("validate", str(DATA / "odd_records"), "--json").out)
    violations = [v for f in document["files"] for v in f["violations"]]
    assert len(violations) == len(lines) == 4 and not document["files"][0]["valid"]
    rows = list(csv.DictReader(io.StringIO(cli("validate", str(DATA / "odd_records"), "-f", "csv").out)))
    assert [row["status"] for row in rows] == ["invalid"] * 4 and rows[0]["json_path"].startswith("$.report_")


def test_runs_list_and_show_take_format_json_and_o(recorded: Home, tmp_path: Path) -> None:
    listed = aoe_runner(recorded, "runs", "list", "--format", "json")
    assert listed.stdout == aoe_runner(recorded, "runs", "list", "--json").stdout
    run_id = json.loads(listed.stdout.splitlines()[0])["id"]
    rows = list(csv.DictReader(io.StringIO(aoe_runner(recorded, "runs", "list", "-f", "csv").stdout)))
    assert [row["run"] for row in rows] == [run_id]
    target = tmp_path / "manifest.json"
    shown = aoe_runner(recorded, "runs", "show", "latest", "-f", "json", "-o", str(target))
    assert shown.returncode == 0 and json.loads(target.read_text())["id"] == run_id
    assert aoe_runner(recorded, "runs", "show", "latest", "--json").stdout == target.read_text()
    assert "1 report\n" in aoe_runner(recorded, "runs", "show", "latest").stdout


# Completion: typer's own, for bash, zsh and fish


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_and_answers(shell: str) -> None:
    script = subprocess.run([sys.executable, "-m", "aoe_runner", "completion", shell], capture_output=True, text=True)
    assert script.returncode == 0 and "_AOE_RUNNER_COMPLETE" in script.stdout and f"complete_{shell}" in script.stdout
    env = {**os.environ, "_AOE_RUNNER_COMPLETE": f"complete_{shell}", "COMP_WORDS": "aoe-runner ru", "COMP_CWORD": "1",
           "_TYPER_COMPLETE_ARGS": "aoe-runner ru", "_TYPER_COMPLETE_FISH_ACTION": "get-args"}  # fmt: skip
    answer = subprocess.run([sys.executable, "-m", "aoe_runner"], capture_output=True, text=True, env=env)
    assert answer.returncode == 0 and "runs" in answer.stdout and "report" not in answer.stdout


def test_completion_of_an_unknown_shell_is_a_usage_error(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("completion", "tcsh")
    assert (
        result.code == 2
        and result.err == "error: completion: 'tcsh' is not one of bash, zsh, fish (see 'aoe-runner completion --help')\n"
    )


# Script arguments go after --


def test_script_arguments_before_dashes_are_refused(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "train.py"
    script.write_text("")
    refused = cli("tune", str(script), "--mode", "op", "--dry-run", "epochs", "3")
    assert refused.code == 2
    assert (
        "'epochs' is not an option; the script's own arguments go after --, as in: aoe-runner tune SCRIPT [OPTIONS] -- epochs 3"
        in refused.err
    )
    assert cli("tune", str(script), "--framework", "tf", "--mode", "op", "--dry-run", "--", "epochs", "--mode", "x").code in (
        0,
        1,
    )
    options = cli("tune", str(script), "--mode", "op", "--epochs", "3")
    assert (
        options.code == 2 and "No such option: --epochs" in options.err and "the script's own options go after --" in options.err
    )


# Errors in one voice


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["report", "x", "-f", "xml"],
            "error: --format: 'xml' is not one of table, json, csv, markdown, html (see 'aoe-runner report --help')\n",
        ),
        (
            ["report", "x", "--top", "-1"],
            "error: --top: '-1' is not a whole number of at least 1 (see 'aoe-runner report --help')\n",
        ),
        (
            ["runs", "list", "--limit", "0"],
            "error: --limit: '0' is not a whole number of at least 1 (see 'aoe-runner runs list --help')\n",
        ),
        (
            ["preflight", "--procs", "1.5"],
            "error: --procs: '1.5' is not a whole number of at least 1 (see 'aoe-runner preflight --help')\n",
        ),
        (
            ["report", "--diff", "a", "b", "--threshold", "1001%"],
            "error: --threshold: '1001%' must be between 0% and 1000% (see 'aoe-runner report --help')\n",
        ),
        (
            ["validate"],
            "error: validate needs a PATH (a result file, a directory or a glob pattern) (see 'aoe-runner validate --help')\n",
        ),
        (
            ["report"],
            "error: report needs a PATH (a result file, a directory or a glob pattern), --run RUN or --samples (see 'aoe-runner report --help')\n",
        ),
        (
            ["report", "--run", ""],
            "error: --run: an empty value names nothing (give a run id, a unique prefix of one, or 'latest') (see 'aoe-runner report --help')\n",
        ),
        (
            ["runs", "rm"],
            "error: runs rm needs RUN (run ids or unique prefixes) (see 'aoe-runner runs rm --help')\n",
        ),
    ],
)
def test_usage_errors_speak_in_one_voice(cli, argv: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    result = cli(*argv)
    assert (result.code, result.err) == (2, message)


def test_a_threshold_of_1000_percent_is_inside_the_range_it_names(cli) -> None:  # type: ignore[no-untyped-def]
    assert cli(*DIFF, "--threshold", "1000%").code == 0


def test_an_aoe_ini_that_is_not_there_is_bad_input(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli("preflight", "--aoe-ini", str(tmp_path / "missing.ini"))
    assert (result.code, result.err) == (4, f"error: --aoe-ini {tmp_path / 'missing.ini'}: no such file\n")
    assert cli("preflight", "--aoe-ini", str(tmp_path)).code == 4


@pytest.mark.parametrize("option", ["--aoe-ini", "--facts"])
def test_preflight_refuses_a_fifo_at_once_not_waiting_for_a_writer(tmp_path: Path, option: str) -> None:
    fifo = tmp_path / "named-pipe"
    os.mkfifo(fifo)
    result = aoe_runner(Home(tmp_path), "preflight", option, str(fifo))  # times out if it waits
    where = f"--aoe-ini {fifo}" if option == "--aoe-ini" else str(fifo)
    assert (result.returncode, result.stderr) == (
        4,
        f"error: {where}: not a regular file (a FIFO, device or socket is never read)\n",
    )


def test_a_binary_aoe_ini_is_named_without_configparser_internals(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    binary, broken = tmp_path / "binary.ini", tmp_path / "broken.ini"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00[[\n\xff\xfe")
    broken.write_text("TUNING_PARALLEL_NUM = 4\n  continued\n[[\n")
    for path, why in (
        (binary, "not a text file (it holds NUL bytes)"),
        (broken, "line 3 is neither a [SECTION] header nor KEY = value: '[['"),
    ):
        checks = json.loads(cli("preflight", "--aoe-ini", str(path), "--json").out)["checks"]
        observed = next(c for c in checks if c["id"] == "tuning_parallel_num")["observed"]
        assert observed.startswith(f"{path}: {why}"), observed
        assert "<string>" not in observed and "Source contains" not in observed


# Bare groups print their help on stdout


@pytest.mark.parametrize("argv", [(), ("runs",), ("bank",)])
def test_a_bare_group_prints_its_help_on_stdout_and_exits_2(cli, argv: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    result = cli(*argv)
    assert (result.code, result.err) == (2, "")
    assert result.out == cli(*argv, "--help").out + "\n" or result.out.rstrip("\n") == cli(*argv, "--help").out.rstrip("\n")
    assert result.out.startswith(f"Usage: aoe-runner {' '.join(argv)}".rstrip() + " ")


# Widths: tables fit the terminal, paths wrap at separators, --wide and pipes keep full lines


@pytest.mark.parametrize(
    "command",
    [("report", str(SAMPLES)), DIFF, ("preflight", "--facts", str(SMALL), "--model-memory", "4GiB")],
    ids=["report", "diff", "preflight"],
)
def test_tables_fit_80_columns_and_wide_keeps_full_lines(cli, monkeypatch, command: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "80")
    fitted = cli(*command).out
    assert max(map(len, fitted.splitlines())) <= 80
    wide = cli(*command, "--wide").out
    assert max(map(len, wide.splitlines())) > 100
    monkeypatch.delenv("COLUMNS")
    assert cli(*command).out == wide  # piped (not a terminal): full lines


def test_paths_wrap_after_a_separator_not_inside_a_name(cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "100")
    lines = cli("preflight", "--facts", str(SMALL), "-v").out.splitlines()
    header = next(line for line in lines if line.startswith("status "))
    start, end = header.index("observed"), header.index("required")
    first = next(i for i, line in enumerate(lines) if line.startswith("pass    TUNE_BANK_PATH"))
    block = [lines[first]]
    for line in lines[first + 1 :]:
        if not line.startswith(" "):
            break
        block.append(line)
    pieces = [line[start:end].strip() for line in block if line[start:end].strip()]
    assert len(pieces) > 1 and max(map(len, lines)) <= 100
    rejoined = "".join(piece if piece.endswith("/") else piece + " " for piece in pieces).strip()
    assert rejoined == "unset: AOE will use /home/tuner/Ascend/latest/data/aoe/custom/op/<soc_version>", pieces


# Numbers and units


def test_csv_has_no_float_noise_and_one_unit_spelling(cli) -> None:  # type: ignore[no-untyped-def]
    summary = list(csv.DictReader(io.StringIO(cli("report", str(SAMPLES), "-f", "csv").out)))
    diff = list(csv.DictReader(io.StringIO(cli(*DIFF, "-f", "csv").out)))
    numbers = [value for row in summary + diff for key, value in row.items() if re.fullmatch(r"-?\d+\.\d+", value or "")]
    assert numbers and all(len(value.split(".")[1]) <= 6 for value in numbers), numbers
    conv = next(row for row in summary if row["name"] == "model/24/m.0/Conv2D")
    assert (conv["time_saved"], conv["speedup"]) == ("58.63", "1.233")
    assert {row["unit"] for row in summary + diff} == {"µs", "ms"} or {row["unit"] for row in summary + diff} == {"µs"}
    assert " us " not in cli(*DIFF).out and " us\n" not in cli(*DIFF).out


def test_the_summary_and_diff_csv_share_their_entry_columns(cli) -> None:  # type: ignore[no-untyped-def]
    summary_header = cli("report", str(SAMPLES), "-f", "csv").out.splitlines()[0].split(",")
    diff_header = cli(*DIFF, "-f", "csv").out.splitlines()[0].split(",")
    assert summary_header[:5] == diff_header[1:6] == ["kind", "name", "op_types", "tuning_mode", "unit"]
    row = next(r for r in csv.DictReader(io.StringIO(cli(*DIFF, "-f", "csv").out)) if r["change"] == "regressed")
    assert (row["name"], row["op_types"], row["tuning_mode"]) == (
        "bert/encoder/layer_3/intermediate/dense/MatMul",
        "MatMulV2",
        "Schedule",
    )


# Words


def test_counts_agree_with_their_nouns(cli) -> None:  # type: ignore[no-untyped-def]
    one_file = cli("report", str(SAMPLES / "retune")).out
    assert "from 1 report in 1 file (0 partial)." in one_file
    assert "new: 3 operators, 0 subgraphs from 1 report." in cli(*DIFF).out
    assert cli(*DIFF, "--fail-on-regression").err == "error: 1 entry regressed by more than 2%\n"
    assert cli("preflight", "--facts", str(SMALL), "--model-memory", "4GiB").out.endswith(", 1 warning, 11 passed, 3 skipped\n")


def test_the_preflight_header_and_the_cpu_fix_say_what_would_work(cli) -> None:  # type: ignore[no-untyped-def]
    out = cli("preflight", "--facts", str(SMALL), "--wide").out
    assert out.startswith("preflight for op tuning (default: no --mode, AOE_MODE not 1 or 2), P=1")
    cpus = next(c for c in json.loads(cli("preflight", "--facts", str(SMALL), "--json").out)["checks"] if c["id"] == "cpus")
    assert cpus["fix"] == (
        "no setting makes 2 CPUs enough: use a host with 74 CPUs, or 60 with TE_PARALLEL_COMPILER=1 and TUNING_PARALLEL_NUM=1"
    )


# Interrupts


def test_ctrl_c_while_modules_load_exits_130_without_a_traceback() -> None:
    """A KeyboardInterrupt raised by an import, as Ctrl-C in the first 0.2 s does, before the crash boundary exists."""
    code = (
        "import sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'typer': raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from aoe_runner.__main__ import main\n"
        "raise SystemExit(main())\n"
    )
    result = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, cwd=ROOT)
    assert (result.returncode, result.stderr) == (130, "error: interrupted\n")


@pytest.mark.parametrize("delay", [0.0, 0.02, 0.05, 0.1, 0.15, 0.2])
def test_a_real_ctrl_c_during_start_up_prints_no_traceback(delay: float) -> None:
    """From the first line of ours on: Python's own start-up (site, .pth files, finding our package) is Python's."""
    code = (  # a Ctrl-C before main's first line (its traceback has this frame only) is Python's, not ours
        "from aoe_runner.__main__ import main\nprint('>', end='', flush=True)\ntry:\n    code = main()\n"
        "except KeyboardInterrupt as error:\n    if error.__traceback__.tb_next is not None:\n        raise\n"
        "    code = 130\nraise SystemExit(code)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, "report", str(SAMPLES)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert process.stdout is not None and process.stdout.read(1) == ">"
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert "Traceback" not in err, err
    assert process.returncode in (130, 0, -signal.SIGINT), err  # 0: it finished first; -2: before Python's own handler


@pytest.fixture
def ctrl_c_handler() -> Iterator[None]:
    """aoe-runner's SIGINT handler and unraisable hook, as main() installs them, for one test."""
    from aoe_runner.__main__ import CtrlC, _interrupt_again

    handler, hook = signal.signal(signal.SIGINT, CtrlC()), sys.unraisablehook
    sys.unraisablehook = _interrupt_again
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)
        sys.unraisablehook = hook


def test_an_exception_a_library_made_of_a_real_ctrl_c_is_the_interruption(ctrl_c_handler: None) -> None:
    """pydantic-core reports a Ctrl-C that lands while it builds a validator as a SchemaError: exit 130, no crash log."""
    from aoe_runner.cli.crashlog import run_guarded
    from aoe_runner.common.terminal import Terminal

    def dispatch() -> int:
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            raise RuntimeError("Error building validator: KeyboardInterrupt") from None
        return 0

    err = io.StringIO()
    assert run_guarded(dispatch, ["report"], Terminal(io.StringIO(), err)) == 130
    assert err.getvalue() == "error: interrupted\n"


def test_a_ctrl_c_python_would_ignore_in_a_finaliser_is_raised_again(ctrl_c_handler: None) -> None:
    """A KeyboardInterrupt in a weakref callback or __del__ (the import system's module locks have one) is printed as
    'Exception ignored' and lost; aoe-runner raises it again where the command can stop."""

    class Finalised:
        def __del__(self) -> None:
            raise KeyboardInterrupt

    def next_step() -> None:
        return None

    with pytest.raises(KeyboardInterrupt):
        Finalised()
        next_step()  # raised as the first function returns after the finaliser
    assert sys.getprofile() is None


def test_an_interrupted_report_says_so_and_exits_130(cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from aoe_runner.report import api as reporting

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(reporting, "summarize_paths", interrupted)
    result = cli("report", str(SAMPLES))
    assert (result.code, result.err) == (130, "error: interrupted\n")


# The reference and samples


def test_the_references_report_options_table_lists_every_report_option() -> None:
    import typer

    from aoe_runner.cli.main import app

    reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    table = reference.split("### `aoe-runner report`\n", 1)[1].split("\n### ", 1)[0]
    report = typer.main.get_command(app).commands["report"]  # type: ignore[attr-defined]
    options = {opt for param in report.params for opt in param.opts if opt.startswith("--") and opt != "--help"}
    assert {"--run", "--allow-env-drift", "--script"} <= options
    assert all(re.search(rf"^\| `{opt}", table, re.MULTILINE) for opt in options), sorted(
        opt for opt in options if not re.search(rf"^\| `{opt}", table, re.MULTILINE)
    )


def test_samples_are_named_by_an_option_and_shipped_as_package_data(cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("report", "--samples", "--json").out == cli("report", str(SAMPLES), "--json").out.replace(
        str(SAMPLES), str(SAMPLES)
    )
    if sys.version_info >= (3, 11):
        import tomllib

        setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
        assert setuptools["package-dir"]["aoe_runner.sample_results"] == "sample_results"
        assert "aoe_runner.sample_results" in setuptools["packages"]
        assert setuptools["package-data"]["aoe_runner.sample_results"] == ["**/*.json"]


def test_the_root_options_that_take_a_value_are_the_ones_command_tree_skips() -> None:
    import typer

    from aoe_runner.cli.app import ROOT_VALUE_OPTIONS, app

    root = typer.main.get_command(app)
    taking = {opt for param in root.params if not getattr(param, "is_flag", True) for opt in param.opts}
    assert taking == set(ROOT_VALUE_OPTIONS)


@pytest.mark.parametrize(
    "argv",
    [
        ["--store", "local", "runs", "list", "--json"],
        ["-q", "--color", "never", "runs", "list", "--json"],
        ["-v", "runs", "list", "--json"],
        ["--", "runs", "list", "--json"],
    ],
)
def test_a_command_after_root_options_runs_as_without_them(cli, tmp_path: Path, monkeypatch, argv: list[str]) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("AOE_RUNNER_HOME", str(tmp_path / "home"))
    result = cli(*argv)
    assert (result.code, result.out) == (0, "")
