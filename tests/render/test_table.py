"""The one table at 60, 80, 120 and unlimited columns, with long and hostile names: identifiers are never split,
free text is cut in the middle keeping head and tail, prose wraps between words, and what is left out is said."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aoe_runner.common.safe_text import visible
from aoe_runner.render.best import best_table
from aoe_runner.render.table import CUT, Column, middle_cut, render
from aoe_runner.render.width import PIECES, text_width
from aoe_runner.runs.best import Best
from tests.conftest import DATA, SAMPLES
from tests.render.hostile import HOSTILE, write_result

WIDTHS = [60, 80, 120, None]
# the report's operator table without its optional columns and with both names cut: it runs past 60 columns
NARROWEST_REPORT = 16 + 16 + len("Schedule") + len("after µs") + len("speed-up") + len("saved µs") + 5 * 2
RUN_ID = "20261126-225405-dab6"
LONG = "model/encoder/layer_11/attention/self/" + "very_long_segment_" * 12 + "MatMul"
CJK = "调优算子/注意力/" * 6 + "矩阵乘"
COLUMNS = [Column("run"), Column.text("operator"), Column("mode"), Column.number("after µs"), Column.prose("fix"),
           Column.number("tuned", optional=True), Column("flag", optional=True)]  # fmt: skip


def _rows() -> list[list[str]]:
    names = [LONG, CJK, *map(visible, HOSTILE)]
    return [
        [RUN_ID, name, "verify:tuned", f"{12.5 * (i + 1):.3f}", "export TE_PARALLEL_COMPILER=1 and run again", "1", ""]
        for i, name in enumerate(names)
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_identifiers_and_numbers_are_never_split(width: int | None) -> None:
    text = render(COLUMNS, _rows(), width)
    for row in _rows():
        assert RUN_ID in text and "verify:tuned" in text and row[3] in text


@pytest.mark.parametrize("width", WIDTHS)
def test_free_text_is_whole_or_cut_in_the_middle_keeping_head_and_tail(width: int | None) -> None:
    lines = render(COLUMNS, _rows(), width).splitlines()
    body = [line for line in lines if line.startswith(RUN_ID)]
    for row, line in zip(_rows(), body, strict=True):
        shown = line[len(RUN_ID) :].strip().split("  ")[0]
        if CUT in shown and CUT not in row[1]:
            head, tail = shown.split(CUT)
            assert row[1].startswith(head) and row[1].endswith(tail) and head and tail
        else:
            assert shown == row[1] or width is not None


@pytest.mark.parametrize("width", WIDTHS)
def test_prose_wraps_between_words_and_never_inside_one(width: int | None) -> None:
    text = render(COLUMNS, _rows(), width)
    assert "TE_PARALLEL_COMPILER=1" in text  # the export can be pasted whole
    words = {word.rstrip(" ") for word in PIECES.findall("export TE_PARALLEL_COMPILER=1 and run again") if word.strip()}
    assert all(word in text for word in words)


# the narrowest this table gets without splitting a word: the run id, a cut name, the mode, a figure, the longest
# word of the fix, and the gaps between them
NARROWEST = len(RUN_ID) + 16 + len("verify:tuned") + len("after µs") + len("TE_PARALLEL_COMPILER=1") + 4 * 2


@pytest.mark.parametrize("width", [60, 80, 120])
def test_a_table_fits_as_far_as_it_can_and_says_what_it_left_out(width: int) -> None:
    text = render(COLUMNS, _rows(), width)
    assert max(text_width(line) for line in text.splitlines()) <= max(width, NARROWEST)
    assert "(tuned: 1 in every row, not shown)" in text and "(flag: none in every row, not shown)" in text.replace("\n ", " ")
    assert f"{CUT} marks text cut to fit the terminal: a wider terminal, --wide or a pipe shows more" in text.replace("\n ", " ")


def test_unlimited_width_shows_every_column_and_every_cell_whole() -> None:
    text = render(COLUMNS, _rows(), None)
    assert all(row[1] in text for row in _rows())
    assert "tuned" in text and "flag" in text and "not shown" not in text and CUT not in text.replace(CJK, "")


def test_cjk_takes_two_columns_per_character_when_cut() -> None:
    cut = middle_cut(CJK, 21)
    assert text_width(cut) <= 21 and cut.startswith("调优") and cut.endswith("矩阵乘")


@settings(max_examples=200, deadline=None)
@given(text=st.text(min_size=1, max_size=80), width=st.integers(min_value=2, max_value=60))
def test_a_middle_cut_fits_and_keeps_the_ends(text: str, width: int) -> None:
    cut = middle_cut(visible(text), width)
    shown = visible(text)
    head, _, tail = cut.partition(CUT)
    assert text_width(cut) <= max(width, 3) and shown.startswith(head) and shown.endswith(tail)


def test_bank_best_fits_the_terminal_without_splitting_ids() -> None:
    found = [Best("operator", LONG, 12.5, 20.0, 1.6, RUN_ID, "host-" + "x" * 20, "2026-11-26T23:02:45+00:00", "8.0.RC1")]
    narrowest = len("operator") + 16 + len("tuned µs") + len("speed-up") + len(RUN_ID) + len(found[0].host) + 5 * 2
    for width in WIDTHS:
        text = best_table(found, width)
        assert RUN_ID in text and found[0].host in text
        if width is not None:
            assert max(text_width(line) for line in text.splitlines()) <= max(width, narrowest)
            header = text.splitlines()[0]
            assert "baseline µs" not in header and "started" not in header and "started" in text.split("-\n")[-1]


# Through the real command line, every table at every width


def _hostile_corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for number, name in enumerate([LONG, CJK, *HOSTILE]):
        write_result(corpus / f"{number}", op_name=name)
    return corpus


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("what", ["report", "diff", "preflight", "preflight -v"])
def test_every_table_of_the_command_line_at_every_width(cli, monkeypatch, tmp_path: Path, width: int | None, what: str) -> None:  # type: ignore[no-untyped-def]
    if width is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(width))
    corpus = _hostile_corpus(tmp_path)
    argv = {
        "report": ("report", str(corpus)),
        "diff": ("report", "--diff", str(SAMPLES / "training_opat"), str(corpus)),
        "preflight": ("preflight", "--facts", str(DATA / "facts" / "small-2c.json"), "--model-memory", "4GiB"),
        "preflight -v": ("preflight", "--facts", str(DATA / "facts" / "small-2c.json"), "--model-memory", "4GiB", "-v"),
    }[what]
    out = cli(*argv).out
    assert "TE_PARALLEL_COMPI\n" not in out and not re.search(r"\d{8}-\d{6}-\n", out)
    if what.startswith("preflight"):
        assert "TE_PARALLEL_COMPILER=1" in out  # the fix can be pasted whole
    if width is not None and what != "preflight -v":  # the full table has five prose columns: it runs past 80
        assert max(text_width(line) for line in out.splitlines()) <= max(width, NARROWEST_REPORT), out
    if width is None:
        assert out == cli(*argv, "--wide").out  # piped: every column, every cell as written


@pytest.mark.parametrize("width", WIDTHS)
def test_runs_list_never_splits_a_run_id(cli, monkeypatch, tmp_path: Path, width: int | None) -> None:  # type: ignore[no-untyped-def]
    from tests.tune.runner import SIMULATOR

    if width is not None:
        monkeypatch.setenv("COLUMNS", str(width))
    script = tmp_path / ("a_script_with_a_long_name_" * 4 + ".py")
    script.write_text(SIMULATOR.read_text())
    monkeypatch.chdir(tmp_path)
    assert cli("tune", str(script), "--mode", "op", "--force", "--", "steps", "2").code == 0
    assert cli("tune", str(script), "--mode", "op", "--force", "--", "progress", "--reports", "2", "--interval", "0").code == 0
    out = cli("runs", "list").out
    run_ids = [line.split('"id": "')[1].split('"')[0] for line in cli("runs", "list", "--json").out.splitlines()]
    assert all(run_id in out for run_id in run_ids)
    narrowest = len(run_ids[0]) + len("succeeded") + len("mode") + 16 + 3 * 2  # started goes before the answers
    if width is not None:
        assert max(text_width(line) for line in out.splitlines()) <= max(width, narrowest), out
    if width is None or width >= 80:  # the answers stay while there is room for them
        assert out.splitlines()[0].split()[3:5] in (["saved", "speed-up"], ["mode", "saved"])
        tuned = json.loads(cli("runs", "list", "--json", "--limit", "1").out)
        assert f"{tuned['saved_us']:.3g} µs" in out and f"{tuned['median_speedup']:.3f}x" in out


@pytest.mark.parametrize("width", [40, 60, 80])
def test_a_summarys_totals_keep_names_whole_and_wrap_values_between_words(cli, monkeypatch, width: int) -> None:  # type: ignore[no-untyped-def]
    def totals(text: str) -> list[str]:
        lines = text.splitlines()
        start = lines.index("") + 3  # the title, its rule, the sentence (one or more lines), a blank line
        start = lines.index("", start - 1) + 1
        return lines[start : lines.index("", start)]

    monkeypatch.delenv("COLUMNS", raising=False)
    piped = totals(cli("report", str(SAMPLES)).out)
    monkeypatch.setenv("COLUMNS", str(width))
    fitted = totals(cli("report", str(SAMPLES)).out)
    words = {word for line in piped for word in line.split()}
    assert {word for line in fitted for word in line.split()} == words  # no word cut in two
    longest_word = max(len(word) for line in piped for word in line[29:].split())
    narrowest = 29 + max(12, longest_word)  # the names, the gap, and prose's floor: narrower runs past the edge, whole
    assert all(text_width(line) <= max(width, narrowest) for line in fitted)
    names = [line[:29].strip() for line in piped]
    assert [line[:29].strip() for line in fitted if line[:29].strip()] == names


def test_piped_and_wide_output_show_every_name_whole(cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    names = [e["name"] for e in json.loads(cli("report", str(SAMPLES), "--json").out)["operators"]]
    longest = max(names, key=len)
    assert len(longest) > 80
    monkeypatch.delenv("COLUMNS", raising=False)
    assert longest in cli("report", str(SAMPLES)).out  # piped
    monkeypatch.setenv("COLUMNS", "80")
    assert longest not in cli("report", str(SAMPLES)).out
    assert longest in cli("report", str(SAMPLES), "--wide").out


def test_a_cut_never_parts_a_letter_from_its_accent() -> None:
    from unicodedata import combining

    name = "cafe\u0301/" * 12  # e and a combining acute accent: é in two code points
    for width in range(3, 40):
        head, _, tail = middle_cut(name, width).partition(CUT)
        assert not (tail and combining(tail[0])), width
        assert not (head and head[-1] == "e" and name[len(head)] == "\u0301"), width


@pytest.fixture(scope="module")
def verify_report(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A real verify of the simulator under a long script name, 3 runs per arm, as saved in its record."""
    from aoe_runner.verify.report import VerifyReport
    from tests.render.html.pages import verify_page
    from tests.tune.runner import SIMULATOR

    root = tmp_path_factory.mktemp("verify")
    script = root / ("a_training_script_with_a_long_name_" * 3 + ".py")
    script.write_text(SIMULATOR.read_text())
    verify_page(root, root / "verify.html", script)
    (saved,) = (root / "home" / "verifications").glob("*/report.json")
    return VerifyReport.model_validate_json(saved.read_text(encoding="utf-8"))


@pytest.mark.parametrize("width", WIDTHS)
def test_verify_fits_the_terminal_without_splitting_run_ids(verify_report, width: int | None) -> None:  # type: ignore[no-untyped-def]
    from aoe_runner.render.verify_report import render_verify

    text = render_verify(verify_report, width=width)
    assert all(run.run in text for run in verify_report.runs)
    if width is None:
        assert str(verify_report.script) in text
    else:
        narrowest = render_verify(verify_report, width=1).splitlines()  # every table at its floors
        bound = max(width, *(len(line) for line in narrowest if " " in line.strip()))
        past = [line.strip() for line in text.splitlines() if text_width(line) > bound]
        assert all(" " not in piece for piece in past), past  # only a name longer than a line, whole on its own
        assert all(piece.rstrip(";,") in str(verify_report.script) for piece in past)
