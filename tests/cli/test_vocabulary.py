"""One vocabulary in every format (docs/guide/conventions.md#one-vocabulary): the words a table shows are the words
csv and JSON hold; only the form of a number differs."""

from __future__ import annotations

import csv
import io
import json

from tests.conftest import DATA, SAMPLES

SMALL = DATA / "facts" / "small-2c.json"
OLD, NEW = str(SAMPLES / "training_opat"), str(SAMPLES / "retune")


def test_a_diffs_change_words_are_the_same_in_the_table_csv_and_json(cli) -> None:  # type: ignore[no-untyped-def]
    table = cli("report", "--diff", OLD, NEW, "-f", "table").out.splitlines()
    start = table.index("Changed entries") + 5  # the title, its rule, a blank line, the header and its rule
    words = [line.split()[0] for line in table[start:] if line and not line.startswith("(")]
    rows = list(csv.DictReader(io.StringIO(cli("report", "--diff", OLD, NEW, "-f", "csv").out)))
    changes = json.loads(cli("report", "--diff", OLD, NEW, "--json").out)["changes"]
    changed = [change["change"] for change in changes if change["change"] != "unchanged"]
    assert words == [row["change"] for row in rows if row["change"] != "unchanged"] == changed
    assert "not_in_new" in words


def test_a_checks_status_is_the_same_word_in_the_table_csv_and_json(cli) -> None:  # type: ignore[no-untyped-def]
    table = cli("preflight", "--facts", str(SMALL), "-v").out.splitlines()
    start = next(i for i, line in enumerate(table) if line.startswith("status ")) + 2
    shown = [line.split()[0] for line in table[start:] if line and line[0] != " "]
    shown = shown[: shown.index("formulas:")]
    rows = list(csv.DictReader(io.StringIO(cli("preflight", "--facts", str(SMALL), "-f", "csv").out)))
    checks = json.loads(cli("preflight", "--facts", str(SMALL), "--json").out)["checks"]
    assert [word.lower() for word in shown] == [row["status"] for row in rows]
    assert sorted(row["status"] for row in rows) == sorted(check["status"] for check in checks)
    assert {"pass", "FAIL", "WARN"} <= set(shown)
