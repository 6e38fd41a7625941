"""Each page opened in headless Chromium at desktop and phone width: drawn, no console errors, no network, a table
that sorts and filters, hostile names shown as text. Screenshots go to artifacts/screenshots/ (docs/development.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aoe_runner.common.safe_text import visible
from tests.conftest import ROOT
from tests.render.html.browser import Tab
from tests.render.html.conftest import DESKTOP, PHONE
from tests.render.html.pages import HOSTILE_NAMES, diff_sides, history_page, verify_page, write_ops

ROWS = "document.querySelectorAll('#table tbody tr')"


def column(tab: Tab, index: int) -> list[str]:
    return tab.evaluate(f"Array.from({ROWS}).map(tr => tr.children[{index}].textContent)")  # type: ignore[no-any-return]


def header_index(tab: Tab, label: str) -> int:
    return tab.evaluate(
        f"Array.from(document.querySelectorAll('#table th')).findIndex(th => th.textContent === {json.dumps(label)})"
    )  # type: ignore[no-any-return]


def check_page(tab: Tab, charts: int, rows: int) -> None:
    """Drawn, quiet, offline, and no wider than the window."""
    assert tab.errors == []
    assert tab.requests == []
    assert tab.evaluate("document.querySelectorAll('.js-plotly-plot').length") == charts
    assert tab.evaluate("document.querySelectorAll('.js-plotly-plot .main-svg').length") >= charts
    assert tab.evaluate(f"{ROWS}.length") == rows
    assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert tab.evaluate("!!document.querySelector('meta[name=viewport]') && document.title.length > 0")
    assert "aoe-runner 0.1.0" in tab.evaluate("document.querySelector('.meta').textContent")


def check_sorting(tab: Tab, label: str) -> None:
    index = header_index(tab, label)
    tab.evaluate(f"document.querySelectorAll('#table th')[{index}].click()")
    ascending = [float(text.replace(",", "")) for text in column(tab, index) if text]
    assert ascending == sorted(ascending) and len(ascending) > 1
    tab.evaluate(f"document.querySelectorAll('#table th')[{index}].click()")
    descending = [float(text.replace(",", "")) for text in column(tab, index) if text]
    assert descending == sorted(ascending, reverse=True)


def check_filter(tab: Tab, needle: str, expected: int) -> None:
    tab.evaluate(
        f"const f = document.getElementById('filter'); f.value = {json.dumps(needle)}; f.dispatchEvent(new Event('input')); 0"
    )
    assert tab.evaluate(f"{ROWS}.length") == expected
    assert all(needle.lower() in text.lower() for text in tab.evaluate(f"Array.from({ROWS}).map(tr => tr.textContent)"))
    assert tab.evaluate("document.getElementById('row-count').textContent").startswith(f"{expected} of ")


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_summary_of_the_samples(cli, show, tmp_path: Path, width: int) -> None:  # type: ignore[no-untyped-def]
    page = tmp_path / "report.html"
    assert cli("report", str(ROOT / "sample_results"), "--format", "html", "-o", str(page)).code == 0

    tab = show(page, width)

    check_page(tab, charts=6, rows=18)  # 16 operators and 2 subgraphs; 6 charts: see test_pages
    check_sorting(tab, "speed-up")
    check_filter(tab, "MatMul", 7)  # 7 operators have MatMul in their name or type


def test_diff_of_the_samples(cli, show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = tmp_path / "diff.html"
    old, new = ROOT / "sample_results" / "training_opat", ROOT / "sample_results" / "retune"
    assert cli("report", "--diff", str(old), str(new), "--format", "html", "-o", str(page)).code == 0

    tab = show(page)

    check_page(tab, charts=1, rows=9)
    assert column(tab, 0)[:2] == ["regressed", "improved"]  # regressions first
    check_filter(tab, "not_in_new", 6)


def test_diff_with_every_kind_of_change(cli, show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = tmp_path / "diff.html"
    old, new = diff_sides(tmp_path)
    assert cli("report", "--diff", str(old), str(new), "--format", "html", "-o", str(page)).code == 0

    tab = show(page, PHONE)

    check_page(tab, charts=1, rows=11)
    assert column(tab, 0)[:5] == ["regressed", "regressed", "improved", "improved", "improved"]
    legend = tab.evaluate("Array.from(document.querySelectorAll('.legendtext')).map(t => t.textContent)")
    assert {"regressed", "improved", "unchanged", "added (x: its time before tuning)"} <= set(legend)
    check_sorting(tab, "after change %")


def test_hostile_names_are_shown_as_text(cli, show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ops = [(name, "Conv2D", 100.0 + index, 10.0) for index, name in enumerate(HOSTILE_NAMES)]
    folder = write_ops(tmp_path / "results", ops).parent
    page = tmp_path / "hostile.html"
    assert cli("report", str(folder), "--format", "html", "-o", str(page)).code == 0

    tab = show(page)

    assert tab.errors == []
    assert tab.evaluate("document.scripts.length") == 3  # the data, plotly.js and ours: nothing from a name
    assert tab.evaluate("document.querySelectorAll('#table b, #table img, .plot img').length") == 0
    assert tab.evaluate("document.querySelectorAll('table').length") == 1
    assert sorted(column(tab, 1)) == sorted(visible(name) for name in HOSTILE_NAMES)
    ticks = tab.evaluate(
        "Array.from(document.querySelectorAll('.js-plotly-plot .ytick text')).map(t => t.textContent).join('\\n')"
    )
    assert "<script>alert(1)</script> [Conv2D] (Format)" in ticks  # plotly's labels read tags: escaped, shown as written
    assert "</table><b>bold</b></script><!-- [Conv2D] (Format)" in ticks


def test_verify_page(show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = tmp_path / "verify.html"
    verify_page(tmp_path, page)

    tab = show(page)

    check_page(tab, charts=2, rows=6)
    assert tab.evaluate("document.getElementById('verdict').textContent").startswith("verdict: faster")
    assert tab.evaluate("document.querySelectorAll('#chart-0 .boxes path').length") >= 6  # one box per run
    check_sorting(tab, "median ms")
    check_filter(tab, "tuned", 3)


def test_history_page(show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = tmp_path / "history.html"
    home = history_page(tmp_path, page)

    tab = show(page, PHONE)

    check_page(tab, charts=3, rows=3)
    assert column(tab, 2) == ["succeeded", "succeeded", "failed"]  # oldest first
    runs = [manifest["id"] for manifest in home.manifests()]
    tab.click("#chart-0 .point:nth-child(2)")  # the second run's bar
    tab.wait_for("!document.getElementById('picked').hidden")
    assert tab.evaluate("document.getElementById('picked').textContent") == f"run {runs[1]}: aoe-runner runs show {runs[1]}"
    check_filter(tab, "failed", 1)
