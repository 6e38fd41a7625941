"""`--format html` on the command line, and what every page holds, without a browser."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aoe_runner.render.html.formatter import HtmlFormatter
from aoe_runner.render.html.page import PageContext
from aoe_runner.report.api import diff_paths
from tests.cli.test_import_sets import _loaded, _offending
from tests.conftest import SAMPLES
from tests.render.html.pages import HOSTILE_NAMES, verify_page, write_ops
from tests.tune.runner import SIMULATOR, Home, aoe_runner

NEVER_WITHOUT_HTML = ["plotly", "aoe_runner.render.html"]


def page_data(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="page-data">(.*?)</script>', page, re.DOTALL)
    assert found is not None
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def test_html_needs_an_output_file(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("report", str(SAMPLES), "--format", "html")

    assert result.code == 2
    assert result.out == ""
    assert result.err.strip() == (
        "error: --format html writes a whole page (about 5 MB with its charting library): give -o FILE, or -o - for stdout "
        "(see 'aoe-runner report --help')"
    )


def test_html_to_stdout_when_asked_by_name(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("report", str(SAMPLES), "--format", "HTML", "-o", "-")

    assert result.code == 0
    assert result.out.startswith("<!DOCTYPE html>") and result.out.endswith("</html>\n")


@pytest.mark.parametrize("encoding", ["ascii", "latin-1:backslashreplace"])
def test_a_page_on_stdout_is_utf8_whatever_its_encoding(tmp_path: Path, encoding: str) -> None:
    """The page says <meta charset="utf-8">: encoded again for an ASCII stdout, it showed `\\u00b5s` for µs."""
    page = tmp_path / "report.html"
    env = {**os.environ, "PYTHONIOENCODING": encoding, "AOE_RUNNER_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "aoe_runner", "report", str(SAMPLES), "--format", "html"]
    out = subprocess.run([*command, "-o", "-"], env=env, capture_output=True, check=True).stdout
    subprocess.run([*command, "-o", str(page)], env=env, capture_output=True, check=True)

    generated = re.compile(rb"Generated [^\n]*")  # the moment, and the command (-o - or -o FILE)
    assert generated.sub(b"", out) == generated.sub(b"", page.read_bytes())
    assert re.search(r"<b>[\d,.]+ µs</b>", out.decode("utf-8"))


def test_a_page_is_self_contained_and_says_where_it_came_from(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = tmp_path / "report.html"
    assert cli("report", str(SAMPLES), "--format", "html", "-o", str(page)).code == 0
    text = page.read_text(encoding="utf-8")

    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=|<link\b|@import|https?://[^\s\"']*\.(js|css)\b", text)
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    assert "<title>aoe-runner report</title>" in text
    assert re.search(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC by aoe-runner 0\.1\.0 with <code>aoe-runner report ", text)
    assert text.count("<script") == 3 and text.count("</script>") == 3
    data = page_data(text)
    assert len(data["charts"]) == 6 and len(data["table"]["rows"]) == 18
    axis_titles = [chart["layout"][axis]["title"]["text"] for chart in data["charts"] for axis in ("xaxis", "yaxis")]
    assert "time saved (µs)" in axis_titles and "model time (ms)" in axis_titles


def test_hostile_names_cannot_end_the_data_script(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = write_ops(tmp_path / "r", [(name, "Conv2D", 10.0 + i, 5.0) for i, name in enumerate(HOSTILE_NAMES)]).parent
    page = tmp_path / "hostile.html"
    assert cli("report", str(folder), "--format", "html", "-o", str(page)).code == 0
    text = page.read_text(encoding="utf-8")

    assert text.count("</script>") == 3 and "<script>alert" not in text and "<img src=x" not in text
    names = [row[1] for row in page_data(text)["table"]["rows"]]
    assert "<script>alert(1)</script>" in names and "lone\\ud800surrogate" in names


def test_the_table_is_bounded_and_says_what_it_left_out(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = write_ops(tmp_path / "r", [(f"op_{i}", "Add", 100.0 + i, 50.0) for i in range(30)]).parent
    page = tmp_path / "top.html"
    assert cli("report", str(folder), "--format", "html", "-o", str(page), "--top", "10").code == 0
    text = page.read_text(encoding="utf-8")

    assert len(page_data(text)["table"]["rows"]) == 10
    assert "30 operators: the table shows the first 10; 20 left out (--top 10)" in text
    assert sum(page_data(text)["charts"][0]["traces"][0]["y"]) == 30  # the histogram counts every entry


def test_a_diff_page_warns_of_environment_drift_at_the_top() -> None:
    compared = diff_paths(
        [str(SAMPLES / "training_opat")], [str(SAMPLES / "retune")], 2.0, drift=["CANN version 8.0.RC1 != 8.1.RC1"]
    )
    formatter = HtmlFormatter(PageContext.of(["report", "--diff"]))

    text = formatter.diff(compared, None).decode("utf-8")

    warning = text.index('<section class="warnings" role="alert">')
    assert warning < text.index('class="facts"')
    assert "comparing across environments: CANN version 8.0.RC1 != 8.1.RC1" in text
    assert "1 entry regressed beyond 2%" in text


def test_verify_refuses_html_without_a_file_before_running_anything(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli("verify", str(SIMULATOR), "--bank", str(tmp_path), "--format", "html", "--", "steps", "40")

    assert result.code == 2
    assert "give -o FILE" in result.err
    assert "baseline" not in result.err  # no run started


def test_runs_report_on_an_empty_history(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = tmp_path / "history.html"

    refused = cli("runs", "report", "-o", str(page))
    assert (refused.code, refused.err) == (4, "error: runs report: no tuning run to show (0 runs recorded); no page written\n")
    assert not page.exists()  # an empty page is no answer
    assert cli("runs", "report", "--format", "json", "-o", str(page)).code == 2
    assert cli("runs", "report").code == 2


def test_other_formats_and_help_never_load_plotly_or_the_pages(tmp_path: Path) -> None:
    for arguments in (("report", str(SAMPLES), "--format", "json"), ("report", str(SAMPLES)), ("report", "--help")):
        assert _offending(_loaded(tmp_path, *arguments), NEVER_WITHOUT_HTML) == [], arguments


def test_an_html_report_reads_plotly_js_without_importing_plotly_or_the_summary_models(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, "report", str(SAMPLES), "--format", "html", "-o", str(tmp_path / "page.html"))

    assert _offending(loaded, ["plotly", "aoe_runner.report.models", "tabulate"]) == []
    assert (tmp_path / "page.html").stat().st_size < 6 * 2**20


def test_a_diff_of_two_runs_across_environments_carries_the_warning(cli, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from aoe_runner.runs import manifest

    home = Home(tmp_path)
    (tmp_path / "bank").mkdir()
    tune = ("tune", str(SIMULATOR), "--mode", "op", "--force", "--bank", "bank", "--grace", "0.5s", "--", "progress")
    for _ in range(2):
        assert aoe_runner(home, *tune, "--reports", "1", "--interval", "0.05").returncode == 0
    old, new = (m["id"] for m in home.manifests())
    monkeypatch.setenv("AOE_RUNNER_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(manifest.Fingerprint, "drift_from", lambda self, other: ["SoC Ascend910B3 != Ascend910B4"])
    page = tmp_path / "diff.html"

    assert cli("report", "--diff", old, new, "--format", "html", "-o", str(page)).code == 5  # refused without the flag
    result = cli("report", "--diff", old, new, "--allow-env-drift", "--format", "html", "-o", str(page))

    assert result.code == 0, result.err
    assert "comparing across environments: SoC Ascend910B3 != Ascend910B4" in page.read_text(encoding="utf-8")


def test_a_verify_page_from_a_saved_report_draws_each_run_from_its_figures(tmp_path: Path) -> None:
    """A report read back from report.json has no step times: each run's median, P95 and P99 stand in for its box."""
    from aoe_runner.render.html.verify_page import verify_page as page_of
    from aoe_runner.verify.report import VerifyReport

    verify_page(tmp_path, tmp_path / "verify.html")
    (saved,) = (tmp_path / "home" / "verifications").glob("*/report.json")
    report = VerifyReport.model_validate_json(saved.read_text(encoding="utf-8"))

    boxes = page_of(report, report.step_times_ms).charts[0].traces

    assert report.step_times_ms is None
    assert [trace["median"] for trace in boxes] == [
        [r.median_ms for r in report.runs if r.arm == arm] for arm in ("baseline", "tuned")
    ]
    assert [trace["upperfence"] for trace in boxes] == [
        [r.p99_ms for r in report.runs if r.arm == arm] for arm in ("baseline", "tuned")
    ]
