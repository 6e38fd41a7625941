"""The text summary made from plain data (render/plain_view.py) is the text the pydantic models make."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoe_runner.render.plain_view import summary_view
from aoe_runner.render.tables import TableFormatter
from aoe_runner.report.api import summarize_paths
from tests.conftest import SAMPLES
from tests.render.hostile import HOSTILE, write_result


def _hostile(tmp_path: Path) -> Path:
    for number, name in enumerate(HOSTILE):
        write_result(tmp_path / f"{number}", op_name=name)
    return tmp_path


@pytest.mark.parametrize("corpus", ["samples", "hostile"])
@pytest.mark.parametrize("markdown", [False, True])
@pytest.mark.parametrize("top", [None, 3])
def test_the_view_makes_the_models_text(tmp_path: Path, corpus: str, markdown: bool, top: int | None) -> None:
    path = SAMPLES if corpus == "samples" else _hostile(tmp_path)
    loaded = summarize_paths([str(path)], allow_empty=True, cache=None)
    for width in (None, 60, 120):
        formatter = TableFormatter(markdown, width)
        assert formatter.summary_text(summary_view(loaded.parts), top) == formatter.summary_text(loaded.summary, top)


def test_a_table_of_the_top_rows_makes_only_those_rows(tmp_path: Path) -> None:
    loaded = summarize_paths([str(SAMPLES)], allow_empty=True, cache=None)
    shown = summary_view(loaded.parts)
    assert len(shown.operators) == loaded.data["totals"]["operators"] == 16
    (first,) = shown.operators[:1]
    assert first.name == loaded.data["operators"][0]["name"]
    with pytest.raises(AttributeError):
        _ = first.no_such_field
