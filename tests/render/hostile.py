"""Result files whose names are written by an attacker, and the checks every text format must pass on them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from aoe_runner.common.safe_text import visible

RESULT_NAME = "aoe_result_opat_20260310142233517_41237.json"
# Each one breaks a format today: screen control, forged lines and rows, Trojan Source, HTML, markdown, formulas.
HOSTILE = [
    "evil\x1b[2J\x1b[H",
    "op\r\nerror: forged line",
    "op\rerror: carriage return",
    "csi\x9b31m c1",
    "nul\x00del\x7fbell\x07tab\tend",
    "trojan\u202eexe.txt\u2066x\u2069",
    "line\u2028separator\u2029para",
    "lone\ud800surrogate\udfff",
    "a|b||c",
    "<script>alert(1)</script>&amp;",
    "`code` and [link](https://evil.example) ![img](https://evil.example/t.png)",
    "back\\|slash\\",
    '=HYPERLINK("https://evil.example","click")',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
]
# What a terminal or a table must never receive from a name: every C0 (the layout's own "\n" aside), DEL, C1,
# the line separators, the bidi controls and lone surrogates.
FORBIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")


def write_result(
    directory: Path,
    op_name: str = "conv1",
    op_type: str = "Conv2D",
    tuning_name: str = "resnet",
    repo_key: str = "1234",
    name: str = RESULT_NAME,
    after_us: float = 10.0,
) -> Path:
    """One report with one operator, one subgraph and model-level times, in the format of AOE.md §4."""
    summary = {"repo_add_num": 1, "repo_hit_num": 0, "repo_reserved_num": 0, "repo_unsatisfied_num": 0,
               "repo_update_num": 0, "total_num": 1}  # fmt: skip
    performance = {"performance_after_tune(us)": after_us, "performance_before_tune(us)": 20.0,
                   "performance_improvement": "100.00%", "update_mode": "add"}  # fmt: skip
    subgraph = {"performance_before_tune(ms)": 2.0, "performance_after_tune(ms)": 1.0,
                "performance_improvement": "100.00%", "repo_key": repo_key}  # fmt: skip
    report = [
        {"basic": {"tuning_name": tuning_name, "tuning_time(s)": 4}},
        {"OPAT": {"opat_tuning_result": "tuning successful", "repo_summary": summary,
                  "repo_modified_operators": [{"op_name": op_name, "op_type": op_type,
                                               "tune_performance": {"Format": performance}}]}},
        {"SGAT": {"model_baseline_performance(ms)": 3.0, "model_result_performance(ms)": 2.0,
                  "model_performance_improvement": "50.00%", "repo_summary": summary,
                  "repo_modified_subgraphs": {"add_repo_subgraphs": [subgraph], "update_repo_subgraphs": []}}},
    ]  # fmt: skip
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    # ensure_ascii: a lone surrogate is written as the escape "\ud800", as any JSON writer may
    path.write_text(json.dumps({"report_20260310142233517_41240": report}), encoding="utf-8")
    return path


def markdown_cells(row: str) -> int:
    """Cells in a GitHub table row, split as cmark-gfm does: a backslash escapes the next character, `|` splits."""
    cells, index = 0, 0
    while index < len(row):
        if row[index] == "\\":
            index += 2
            continue
        cells += row[index] == "|"
        index += 1
    return cells - 1


def assert_table_safe(out: str, plain_out: str) -> None:
    """No control character from a name, and the same lines (rows, rules, titles) as with a plain name."""
    assert FORBIDDEN.search(out) is None, visible(out)
    assert len(out.split("\n")) == len(plain_out.split("\n"))


def assert_markdown_safe(out: str, plain_out: str) -> None:
    assert_table_safe(out, plain_out)
    assert "<" not in out and ">" not in out  # no HTML at all: our own markdown uses none
    for block in out.split("\n\n"):
        rows = [line for line in block.split("\n") if line.startswith("|")]
        assert len({markdown_cells(row) for row in rows}) <= 1, block  # every row has its header's cells
