"""Edges an attack on the tables, the units, colour, -q and completion found: each is one line and the right exit
code, never a traceback, a hang, a leak from one command into the next, or a fitted table in a file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aoe_runner.render.width import wrap_line
from tests.cli.test_completion import _complete
from tests.conftest import DATA, SAMPLES
from tests.render.hostile import write_result
from tests.tune.runner import Home, tune

SMALL = DATA / "facts" / "small-2c.json"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["preflight", "--facts", str(SMALL), "--model-memory", "1" + "0" * 310 + "PiB"], "is more than 1 EiB"),
        (["preflight", "--facts", str(SMALL), "--model-memory", "1e300PiB"], "is not a size"),
        (["report", str(SAMPLES), "--min-gain", "sNaN%"], "is not a percentage"),
        (["report", str(SAMPLES), "--min-gain", "NaN"], "must be between 0% and 1000%"),
        (["tune", "x.py", "--mode", "op", "--timeout", "1.5.5s", "--dry-run"], "is not a duration"),
        (["runs", "list", "--limit", "9223372036854775808"], "is not a whole number of at least 1"),
        (["preflight", "--procs", "1" * 311], "is not a whole number of at least 1"),
    ],
)
def test_odd_values_are_one_usage_line(cli, argv: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    result = cli(*argv)
    assert result.code == 2 and message in result.err and result.err.count("\n") == 1, result.err


def test_a_columns_value_that_is_not_ascii_digits_is_no_width(cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "²")
    assert cli("report", str(SAMPLES)).code == 0


def test_a_file_gets_the_whole_table_whatever_the_terminal(cli, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "50")
    written = tmp_path / "summary.txt"
    assert cli("report", str(SAMPLES), "-o", str(written)).code == 0
    monkeypatch.delenv("COLUMNS")
    assert written.read_text() == cli("report", str(SAMPLES)).out  # every column, nothing cut to fit


def test_wrapped_prose_never_puts_a_space_inside_a_word_or_a_path() -> None:
    text = "see /usr/local/Ascend/ascend-toolkit/latest/tools/aoe/conf/aoe.ini for TUNING_PARALLEL_NUM"
    for width in (5, 10, 20, 40):
        wrapped = wrap_line(text, width)
        assert "".join(wrapped.split()) == "".join(text.split())  # nothing lost, nothing added but line breaks
        assert all(piece in text for piece in wrapped.split())  # and no space put inside a word or a path


def test_a_filter_that_matched_nothing_is_shown_escaped(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("runs", "list", "--script", "a\nforged: line\x1b[2J")
    assert result.code == 0 and "\x1b" not in result.out and result.out.count("\n") == 1


def test_store_chosen_for_one_command_is_not_the_next_ones(cli) -> None:  # type: ignore[no-untyped-def]
    cli("--store", "postgresql://u@127.0.0.1:1/db", "preflight", "--facts", str(SMALL))
    assert cli("runs", "list").code == 0  # the local history, not the store the previous command named


def test_a_name_that_is_a_verdict_word_is_never_painted(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    for number, name in enumerate(["FAIL", "regressed", "improved"]):
        write_result(corpus / str(number), op_name=name)
    done = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "--color", "always", "report", str(corpus)], capture_output=True, text=True
    )
    assert done.returncode == 0 and "\x1b[" not in done.stdout


def test_quiet_still_says_how_a_tune_ended(tmp_path: Path) -> None:
    home = Home(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "-q", "tune", str(Path(__file__).parents[1] / "simulator" / "train.py"), "--mode", "op",
         "--force", "--", "exit", "3"],
        env=home.env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 3
    assert "failed, exit 3" in done.stderr and "warning:" not in done.stderr


def test_completion_reads_no_index_so_a_fifo_cannot_hang_it_and_a_damaged_one_is_left_alone(tmp_path: Path) -> None:
    home = Home(tmp_path)
    code, _, err = tune(home, "exit", "0")
    assert code == 0, err
    run_id = home.only_manifest()["id"]
    index = tmp_path / "home" / "runs.db"
    index.unlink()
    os.mkfifo(index)
    assert _complete("aoe-runner runs show ", home.env) == ["latest", run_id]
    index.unlink()
    index.write_bytes(b"garbage, not a database")
    assert _complete("aoe-runner runs show 2", home.env) == [run_id]
    assert index.read_bytes() == b"garbage, not a database"
