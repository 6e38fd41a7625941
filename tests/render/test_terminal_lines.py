"""Warnings and errors stay one line each whatever path or name they quote; no stream encoding makes output crash."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from aoe_runner.common.terminal import Terminal
from tests.conftest import ROOT, SAMPLES
from tests.render.hostile import FORBIDDEN, RESULT_NAME, write_result

FORGED = "\x1b[2J\x1b[H\r\nerror: forged\u202e"


def test_hostile_file_names_give_one_escaped_line_per_problem(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    garbage = tmp_path / f"aoe_result_opat_1{FORGED}.json"
    garbage.write_text("not json")
    cut = write_result(tmp_path, name=f"aoe_result_opat_2{FORGED}.json")
    cut.write_bytes(cut.read_bytes()[:-40])  # cut off mid-write: a warning naming the file
    good = write_result(tmp_path, name=RESULT_NAME)

    # --allow-empty: the cut file holds no complete report, which is otherwise an error too
    result = cli("report", "--allow-empty", str(garbage), str(cut), str(good), str(tmp_path / f"missing{FORGED}"))

    assert result.code == 4
    lines = result.err.splitlines()
    assert FORBIDDEN.search(result.err) is None
    assert [line.split(":")[0] for line in lines] == ["warning", "error", "error"]
    assert not any(line.startswith("error: forged") for line in lines)
    assert all("\\x1b[2J\\x1b[H\\r\\nerror: forged\\u202e" in line for line in lines)


def test_a_stream_that_cannot_hold_a_character_gets_an_escape_instead() -> None:
    out, err = io.BytesIO(), io.BytesIO()
    terminal = Terminal(io.TextIOWrapper(out, encoding="ascii"), io.TextIOWrapper(err, encoding="ascii", write_through=True))

    terminal.result("10 µs 子图 \U0001f600 \ud800\n")
    terminal.warning("caf\xe9 \ud800")

    assert out.getvalue() == b"10 \\u00b5s \\u5b50\\u56fe \\ud83d\\ude00 \\ud800\n"
    assert err.getvalue() == b"warning: caf\\u00e9 \\ud800\n"


def test_utf8_bytes_go_out_as_they_are_or_as_escapes_where_the_stream_is_not_utf8() -> None:
    """report's JSON arrives as UTF-8 bytes: a UTF-8 stream gets them unchanged, after any text written before them;
    any other stream gets the text, with escapes for what its encoding cannot hold."""
    utf8, ascii_ = io.BytesIO(), io.BytesIO()
    terminal = Terminal(io.TextIOWrapper(utf8, encoding="UTF8"))
    terminal.out.write("before ")
    terminal.result("子图 µs\n".encode())
    other = Terminal(io.TextIOWrapper(ascii_, encoding="ascii"))
    other.result("子图 µs\n".encode())

    assert utf8.getvalue() == "before 子图 µs\n".encode()
    assert ascii_.getvalue() == b"\\u5b50\\u56fe \\u00b5s\n"


def test_report_on_an_ascii_stdout_writes_escapes_and_exact_json(tmp_path: Path) -> None:
    write_result(tmp_path, op_name="算子\ud800µ")

    def report(encoding: str, *options: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONIOENCODING": encoding, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "aoe_runner", "report", str(SAMPLES), str(tmp_path), *options]
        return subprocess.run(command, env=env, capture_output=True, text=True, encoding="ascii", errors="strict", timeout=60)

    ascii_json = report("ascii", "-f", "json")
    ascii_table = report("ascii")

    assert (ascii_json.returncode, ascii_table.returncode) == (0, 0), ascii_json.stderr + ascii_table.stderr
    names = {operator["name"] for operator in json.loads(ascii_json.stdout)["operators"]}
    assert "算子\ud800µ" in names  # exact, through \u escapes that JSON reads back
    assert "saved \\u00b5s" in ascii_table.stdout and "\\u7b97\\u5b50\\ud800\\u00b5" in ascii_table.stdout
