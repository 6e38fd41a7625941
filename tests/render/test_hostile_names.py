"""`report` on result files with hostile names, through the real CLI: no format can be forged, JSON stays exact."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from aoe_runner.common.safe_text import csv_cell
from tests.render.hostile import HOSTILE, assert_markdown_safe, assert_table_safe, write_result


@pytest.fixture
def plain(cli, tmp_path: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The output of every format for the same file with plain names: the layout a hostile name must not change."""
    directory = tmp_path / "plain"
    directory.mkdir()
    path = write_result(directory)
    return {fmt: cli("report", str(path), "-f", fmt).out for fmt in ("table", "markdown")}


def _hostile_file(tmp_path: Path, name: str) -> Path:
    directory = tmp_path / "hostile"
    directory.mkdir(exist_ok=True)
    return write_result(directory, op_name=name, op_type=name, tuning_name=name, repo_key=name)


def test_a_table_shows_hostile_names_as_escapes(cli, tmp_path: Path, plain: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    for name in HOSTILE:
        result = cli("report", str(_hostile_file(tmp_path, name)))

        assert result.code == 0, result.err
        assert_table_safe(result.out, plain["table"])


def test_escapes_are_the_ones_a_reader_knows(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = cli("report", str(_hostile_file(tmp_path, "a\x1b[2J\r\n\t\x9b\u202e\ud800z"))).out

    assert "a\\x1b[2J\\r\\n\\t\\x9b\\u202e\\ud800z" in out


def test_markdown_escapes_cells_html_and_links(cli, tmp_path: Path, plain: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    for name in HOSTILE:
        result = cli("report", str(_hostile_file(tmp_path, name)), "-f", "markdown")

        assert result.code == 0, result.err
        assert_markdown_safe(result.out, plain["markdown"])


def test_markdown_shows_what_it_escapes(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = cli("report", str(_hostile_file(tmp_path, "<script>x</script> a|b `c` [l](u) \\")), "-f", "markdown").out

    assert "&lt;script&gt;x&lt;/script&gt; a\\|b \\`c\\` [l\\](u) \\\\" in out


def test_a_list_item_stays_one_plain_item(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write_result(tmp_path, op_name="# heading\n- item <b>", after_us=20.0)  # no speed-up: listed under "No real gain"

    table = cli("report", str(path)).out
    markdown = cli("report", str(path), "-f", "markdown").out

    assert "\n  # heading\\n- item <b> [Conv2D] (Format)\n" in table
    assert "\n- \\# heading\\\\n- item &lt;b&gt; [Conv2D] (Format)\n" in markdown


def test_csv_cells_never_start_a_formula_nor_a_row(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for name in HOSTILE:
        result = cli("report", str(_hostile_file(tmp_path, name)), "-f", "csv")

        assert result.code == 0, result.err
        header, operator, subgraph = csv.reader(io.StringIO(result.out))
        assert len(header) == len(operator) == len(subgraph)
        assert operator[header.index("name")] == subgraph[header.index("name")] == csv_cell(name)
        for cell in operator + subgraph:
            assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r"), cell
            assert "\r" not in cell and "\n" not in cell
        assert (operator[header.index("before")], operator[header.index("after")]) == ("20.0", "10.0")  # still numbers


def test_the_csv_rule(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rows = {
        name: next(csv.DictReader(io.StringIO(cli("report", str(_hostile_file(tmp_path, name)), "-f", "csv").out)))["name"]
        for name in ('=HYPERLINK("u")', "+1+cmd", "-x", "@SUM(1)", "\t=1", "\r=1", "-3.5", "+2", "a=b", "'quoted")
    }

    assert rows == {
        '=HYPERLINK("u")': '\'=HYPERLINK("u")',
        "+1+cmd": "'+1+cmd",
        "-x": "'-x",
        "@SUM(1)": "'@SUM(1)",
        "\t=1": "\\t=1",  # tab and CR are shown as escapes, so they cannot lead a cell
        "\r=1": "\\r=1",
        "-3.5": "-3.5",  # a plain number is no formula
        "+2": "+2",
        "a=b": "a=b",
        "'quoted": "'quoted",
    }


def test_json_keeps_every_name_exactly(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for name in HOSTILE:
        result = cli("report", str(_hostile_file(tmp_path, name)), "-f", "json")

        assert result.code == 0, result.err
        document = json.loads(result.out)
        assert document["operators"][0]["name"] == name
        assert document["subgraphs"][0]["repo_key"] == name
        assert document["model_times"][0]["tuning_name"] == name


def test_a_lone_surrogate_is_a_json_escape(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = cli("report", str(_hostile_file(tmp_path, "a\ud800b")), "-f", "json").out

    assert '"name": "a\\ud800b"' in out
    assert "\ud800" not in out  # the escape, never the character, which no UTF-8 stream can carry


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_diff_of_hostile_names(cli, tmp_path: Path, fmt: str) -> None:  # type: ignore[no-untyped-def]
    hostile, plain, new = tmp_path / "hostile", tmp_path / "plain", tmp_path / "new"
    for directory in (hostile, plain, new):
        directory.mkdir()
    for number, name in enumerate(HOSTILE):
        file = f"aoe_result_opat_20260310142233517_{number}.json"
        write_result(hostile, op_name=name, repo_key=name, tuning_name=name, name=file)
        write_result(plain, op_name=f"op{number}", repo_key=str(number), tuning_name=f"t{number}", name=file)
    write_result(new, op_name="plain")

    result = cli("report", "--diff", str(hostile), str(new), "-f", fmt, "--top", "100")
    plain_out = cli("report", "--diff", str(plain), str(new), "-f", fmt, "--top", "100").out

    assert result.code == 0, result.err
    if fmt == "json":
        labels = {change["label"] for change in json.loads(result.out)["changes"]}
        assert {f"{name} [Conv2D] (Format)" for name in HOSTILE} <= labels
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(result.out)))
        assert len(rows) == len(list(csv.DictReader(io.StringIO(plain_out))))
        assert not [row for row in rows if row["name"][:1] in ("=", "+", "-", "@")]
    elif fmt == "table":
        assert_table_safe(result.out, plain_out)
    else:
        assert_markdown_safe(result.out, plain_out)
