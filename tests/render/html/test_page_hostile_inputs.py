"""Pages made from unlucky or hostile inputs, opened in headless Chromium: long unbroken names at phone width,
markup in run ids, equal speed-ups, a missing charting library."""

from __future__ import annotations

import html
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aoe_runner.common.safe_text import visible
from aoe_runner.render.html.assets import plotly_js
from aoe_runner.render.html.charts import histogram, histogram_chart
from aoe_runner.render.html.escape import label
from aoe_runner.render.html.formatter import HtmlFormatter
from aoe_runner.render.html.page import PageContext
from aoe_runner.render.numbers import figure
from tests.conftest import ROOT
from tests.render.html.browser import Tab
from tests.render.html.conftest import PHONE
from tests.render.html.pages import history_page, verify_page, write_ops
from tests.tune.runner import SIMULATOR, Home, aoe_runner

LONG_DIRECTORY = "a_rather_long_directory_name_without_any_spaces/and_another_level_of_nesting_for_the_models"


def fits(tab) -> bool:  # type: ignore[no-untyped-def]
    """Nothing on the page is wider than the window (a phone's layout viewport widens to the widest content)."""
    return tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth && window.innerWidth <= 400")  # type: ignore[no-any-return]


def test_a_long_script_name_fits_a_phone_on_an_empty_history(cli, show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    script = f"/srv/{LONG_DIRECTORY}/train_with_a_long_name.py"
    page = tmp_path / "history.html"
    assert cli("runs", "report", "--script", script, "-o", str(page)).code == 4  # nothing to show: no page
    context = PageContext.of(["runs", "report", "--script", script, "-o", str(page)])
    page.write_bytes(HtmlFormatter(context).history([], script))  # the page a library caller gets for no runs

    tab = show(page, PHONE)

    assert tab.errors == []
    assert script in tab.evaluate("document.querySelector('main .note').textContent")
    assert fits(tab)


def test_a_verify_page_of_a_deep_script_fits_a_phone(show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / LONG_DIRECTORY / "train.py"
    script.parent.mkdir(parents=True)
    shutil.copy(SIMULATOR, script)
    page = tmp_path / "verify.html"
    verify_page(tmp_path, page, script)

    tab = show(page, PHONE)

    assert tab.errors == []
    assert str(script) in tab.evaluate("Array.from(document.querySelectorAll('main .note')).map(p => p.textContent).join()")
    assert fits(tab)


def test_a_histogram_of_equal_speed_ups_draws_its_bar(cli, show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """One operator, or all with the same speed-up (common for the few subgraphs of a run): one bin, visible."""
    ops = [("a/MatMul", "MatMulV2", 100.0, 50.0), ("b/MatMul", "MatMulV2", 200.0, 100.0)]
    folder = write_ops(tmp_path / "results", ops).parent
    page = tmp_path / "equal.html"
    assert cli("report", str(folder), "--format", "html", "-o", str(page)).code == 0

    tab = show(page)

    assert tab.errors == []
    assert tab.evaluate("document.querySelector('.chart figcaption').textContent").startswith("Speed-up")
    bar = tab.evaluate("(() => { const r = document.querySelector('#chart-0 .point path').getBoundingClientRect(); "
                       "return [r.width, r.height]; })()")  # fmt: skip
    assert bar[0] >= 20 and bar[1] >= 100  # the bar of 2 operators at 2x, not a zero-width sliver
    ticks = tab.evaluate("Array.from(document.querySelectorAll('#chart-0 .xtick text')).map(t => t.textContent)")
    assert "2" in ticks


def test_a_run_id_with_markup_is_text_in_the_history_hover(show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A run id is the manifest's own (another host's, with a shared store): plotly reads tags in hover labels, and the
    `runs show` line a click shows is copied into a shell."""
    page = tmp_path / "history.html"
    home = history_page(tmp_path, page)
    hostile = '<b>bold</b><a href="https://example.invalid/">link</a>; touch pwned \u202e\'s'
    manifest_path = next((tmp_path / "home" / "runs").glob("*/manifest.json"))
    manifest = json.loads(manifest_path.read_text())
    manifest["id"] = hostile
    manifest_path.write_text(json.dumps(manifest))
    assert aoe_runner(home, "runs", "report", "-o", str(page)).returncode == 0

    tab = show(page)

    points = tab.evaluate("Array.from(document.querySelectorAll('.plot .point')).map((p, i) => p.dataset.probe = i).length")
    assert points == 3 + 3 * 4 + 3  # the bars of time saved, 4 series of entries, the bank sizes
    picked = set()
    for point in range(points):
        tab.click(f".point[data-probe='{point}']")
        shown = tab.evaluate("Array.from(document.querySelectorAll('.hoverlayer .hovertext')).map(h => h.textContent)")
        assert tab.evaluate("document.querySelectorAll('.hoverlayer a, .hoverlayer tspan[style*=bold]').length") == 0
        assert all("<b>bold</b>" in text for text in shown if "bold" in text)
        picked.add(tab.evaluate("document.getElementById('picked').textContent"))
    assert f"run {visible(hostile)}: aoe-runner runs show {shlex.quote(visible(hostile))}" in picked
    plain = [run["id"] for run in home.manifests() if run["id"] != hostile]
    assert {f"run {run}: aoe-runner runs show {run}" for run in plain} <= picked  # a plain id stays unquoted
    assert any(visible(hostile) in text for text in column_texts(tab))
    assert tab.errors == []


def column_texts(tab, index: int = 0) -> list[str]:  # type: ignore[no-untyped-def]
    return tab.evaluate(f"Array.from(document.querySelectorAll('#table tbody tr')).map(tr => tr.children[{index}].textContent)")  # type: ignore[no-any-return]


@pytest.mark.parametrize("bundle", [None, b'var x = "\xff\xfe";'], ids=["missing", "not UTF-8"])
def test_verify_without_plotly_is_refused_before_any_run(tmp_path: Path, bundle: bytes | None) -> None:
    """A broken install (no plotly.min.js, or a damaged one) is found before the runs, not after an hour of them (a
    damaged one was exit 3, after them)."""
    fake = tmp_path / "shadow" / "plotly"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")  # a plotly package without its package_data/plotly.min.js
    if bundle is not None:
        (fake / "package_data").mkdir()
        (fake / "package_data" / "plotly.min.js").write_bytes(bundle)
    (tmp_path / "bank").mkdir()
    home = Home(tmp_path)
    env = {**home.env, "PYTHONPATH": f"{fake.parent}{os.pathsep}{ROOT}"}
    page = tmp_path / "verify.html"
    command = ["verify", str(SIMULATOR), "--bank", "bank", "--format", "html", "-o", str(page), "--", "steps", "40"]
    result = subprocess.run([sys.executable, "-m", "aoe_runner", *command], env=env, cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)  # fmt: skip

    assert result.returncode == 2, result.stderr
    assert "plotly" in result.stderr and "baseline 1/" not in result.stderr
    assert not page.exists()
    assert home.manifests() == []


def test_the_filter_matches_within_a_cell_not_across_two(cli, show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = write_ops(tmp_path / "results", [("layer_1/xyz", "Conv2D", 100.0, 50.0), ("layer_2/abc", "Relu", 9.0, 8.0)]).parent
    page = tmp_path / "filter.html"
    assert cli("report", str(folder), "--format", "html", "-o", str(page)).code == 0
    tab = show(page)

    def rows_for(needle: str) -> int:
        tab.evaluate(f"(() => {{ const f = document.getElementById('filter'); f.value = {json.dumps(needle)}; "
                     "f.dispatchEvent(new Event('input')); })()")  # fmt: skip
        return tab.evaluate("document.querySelectorAll('#table tbody tr').length")  # type: ignore[no-any-return]

    assert rows_for("xyz") == 1 and rows_for("conv2d") == 1 and rows_for("operator") == 2
    assert rows_for("xyzconv2d") == 0  # the end of the name and the start of the op type are two cells
    assert rows_for("operatorlayer") == 0


def test_the_table_works_when_the_charts_cannot_be_drawn(cli, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A browser that cannot run plotly.js (too old, or a script blocker): the charts say so, the table still works."""
    page = tmp_path / "report.html"
    assert cli("report", str(ROOT / "sample_results"), "--format", "html", "-o", str(page)).code == 0
    text = page.read_text(encoding="utf-8")
    start = text.index("<script>") + len("<script>")
    page.write_text(text[:start] + 'throw new Error("no plotly here");' + text[text.index("</script>", start) :], "utf-8")

    tab = browser.open(page, PHONE)
    tab.wait_for("document.querySelectorAll('#table tbody tr').length > 0", timeout=10)

    assert tab.evaluate("document.querySelectorAll('#table tbody tr').length") == 18
    tab.evaluate(
        "(() => { const f = document.getElementById('filter'); f.value = 'MatMul'; f.dispatchEvent(new Event('input')); })()"
    )
    assert tab.evaluate("document.querySelectorAll('#table tbody tr').length") == 7
    failed = tab.evaluate("Array.from(document.querySelectorAll('.plot')).map(p => p.textContent)")
    assert len(failed) == 6 and all(message.startswith("This chart could not be drawn") for message in failed)
    assert [error for error in tab.errors if "no plotly here" not in error] == []


def test_long_op_types_and_tuning_names_leave_room_for_the_bars(cli, show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A fused op type or a tuning name of hundreds of characters is cut on the axis (hover and table hold it whole)."""
    fused = "Fused" + "MatMulAddRelu" * 20
    ops = [(f"layer_{i}/op", fused if i % 2 else "Conv2D", 100.0 + i, 50.0) for i in range(6)]
    folder = write_ops(tmp_path / "results", ops, tuning_name="resnet50_" + "very_long_tuning_name_" * 12).parent
    sgat = folder / "aoe_result_opat_20260310160512004_41877.json"
    shutil.copy(ROOT / "sample_results" / "training_sgat" / sgat.name, sgat)
    text = sgat.read_text(encoding="utf-8").replace("resnet50_", "resnet50_" + "very_long_tuning_name_" * 12)
    sgat.write_text(text, encoding="utf-8")
    page = tmp_path / "long.html"
    assert cli("report", str(folder), "--format", "html", "-o", str(page)).code == 0

    tab = show(page)

    assert tab.errors == []
    captions = tab.evaluate("Array.from(document.querySelectorAll('.chart figcaption')).map(c => c.textContent)")
    for title in ("Time saved per op type", "Median speed-up per op type", "Model time before and after"):
        index = next(i for i, caption in enumerate(captions) if caption.startswith(title))
        area = tab.evaluate(f"(() => {{ const r = document.querySelector('#chart-{index} .nsewdrag').getBoundingClientRect(); "
                            "return [r.width, r.height]; })()")  # fmt: skip
        assert area[0] >= 200 and area[1] >= 150, (title, area)  # the bars' area, not squeezed by the tick labels
        ticks = tab.evaluate(f"Array.from(document.querySelectorAll('#chart-{index} .xtick text')).map(t => t.textContent)")
        assert all(len(tick) <= 40 for tick in ticks), ticks
    assert fused in column_texts(tab, 2)


@given(st.text(max_size=80), st.integers(min_value=8, max_value=40), st.integers(min_value=0, max_value=6))
def test_a_cut_label_keeps_its_start_and_end(name: str, limit: int, tail: int) -> None:
    shown = html.unescape(label(name, limit, tail))
    whole = visible(name)

    assert shown == whole if len(whole) <= limit else (len(shown) == limit and shown.endswith(whole[len(whole) - tail :]))
    assert whole.startswith(shown[: limit - 1 - tail])


def test_long_names_are_cut_in_hover_labels_not_in_the_table(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Fused operators can have names of thousands of characters: a diff draws up to 5,000 points per kind and chart,
    each with its name, so whole names in hover labels grew the page past its 10 MB bound; the table keeps them whole."""
    long_type = "FusedMatMulBiasAdd_" * 150  # op types too: the op-type charts' hover labels held them whole
    ops = [
        (f"{index:04d}/" + "fused_scope/MatMul_" * 150, long_type if index % 2 else "MatMulV2", 100.0, 50.0 + index % 7)
        for index in range(400)
    ]
    old = write_ops(tmp_path / "old", ops).parent
    new = write_ops(tmp_path / "new", [(n, t, b, a * 1.2 if i % 2 else a) for i, (n, t, b, a) in enumerate(ops)]).parent
    pages = {}
    for name, command in (("diff", ("--diff", str(old), str(new))), ("summary", (str(new),))):
        pages[name] = tmp_path / f"{name}.html"
        assert cli("report", *command, "--format", "html", "-o", str(pages[name])).code == 0

    for page in pages.values():
        text = page.read_text(encoding="utf-8")
        data = json.loads(re.search(r'id="page-data">(.*?)</script>', text, re.DOTALL).group(1))  # type: ignore[union-attr]
        for chart in data["charts"]:
            for trace in chart["traces"]:
                for key in ("text", "hovertext"):
                    assert all(len(label_text) <= 320 for label_text in trace.get(key) or []), key
        assert any(ops[0][0] in str(value) for row in data["table"]["rows"] for value in row)
    diff_data = pages["diff"].read_text(encoding="utf-8")
    assert len(diff_data) - len(plotly_js()) < 2_200_000  # 400 rows of 2,855-character names (200 of 2,850-character
    # op types), whole, and their labels, cut


def test_a_page_says_which_inputs_could_not_be_read(cli, show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Exit 4 tells the terminal; the page, looked at later by someone else, must not pass for the whole picture."""
    old = write_ops(tmp_path / "old", [("a/MatMul", "MatMulV2", 100.0, 60.0)]).parent
    folder = write_ops(tmp_path / "results", [("a/MatMul", "MatMulV2", 100.0, 50.0)]).parent
    broken = folder / "aoe_result_opat_20260310150000000_41238.json"
    broken.write_text("this is not JSON", encoding="utf-8")
    missing = tmp_path / "nowhere" / "aoe_result_opat_20260310150000000_1.json"
    pages = {"summary": tmp_path / "summary.html", "diff": tmp_path / "diff.html"}
    assert cli("report", str(folder), str(missing), "--format", "html", "-o", str(pages["summary"])).code == 4
    assert cli("report", "--diff", str(old), str(folder), "--format", "html", "-o", str(pages["diff"])).code == 4

    for name, page in pages.items():
        tab = show(page)
        warnings = tab.evaluate("(document.querySelector('.warnings') || {}).textContent || ''")
        assert str(broken) in warnings, name
        if name == "summary":
            assert str(missing) in warnings
        assert tab.errors == []


def test_a_run_whose_manifest_names_another_id_is_read_from_its_own_directory(show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The results are those of the record that was listed and loaded, never of a directory the manifest names:
    an id of '../..' would have read result files from outside the run store."""
    page = tmp_path / "history.html"
    home = history_page(tmp_path, page)
    paths = (tmp_path / "home" / "runs").glob("*/manifest.json")
    manifest_path = next(path for path in paths if json.loads(path.read_text())["result_files"])
    manifest = json.loads(manifest_path.read_text())
    manifest["id"] = "../../elsewhere"
    manifest_path.write_text(json.dumps(manifest))
    assert aoe_runner(home, "runs", "report", "-o", str(page)).returncode == 0

    tab = show(page)

    saved = dict(zip(column_texts(tab, 0), column_texts(tab, header(tab, "operator time saved µs")), strict=True))
    assert saved["../../elsewhere"] != ""  # read from its own directory, like the other succeeded run
    assert tab.errors == []


def header(tab, name: str) -> int:  # type: ignore[no-untyped-def]
    return tab.evaluate(
        f"Array.from(document.querySelectorAll('#table th')).findIndex(th => th.textContent === {json.dumps(name)})"
    )  # type: ignore[no-any-return]


def test_history_times_are_utc_and_say_so(show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A manifest written with a local offset (another host, another aoe-runner) is placed at its real instant:
    plotly drops an offset, so every time is converted to UTC, and the axes and the table say UTC."""
    page = tmp_path / "history.html"
    home = history_page(tmp_path, page)
    manifest_path = next((tmp_path / "home" / "runs").glob("*/manifest.json"))
    manifest = json.loads(manifest_path.read_text())
    utc = datetime.fromisoformat(manifest["started_at"].replace("Z", "+00:00"))
    manifest["started_at"] = utc.astimezone(timezone(timedelta(hours=8))).isoformat()
    manifest_path.write_text(json.dumps(manifest))
    assert aoe_runner(home, "runs", "report", "-o", str(page)).returncode == 0

    tab = show(page)

    row = column_texts(tab, 0).index(manifest["id"])  # runs of one second are in the order of their random part
    assert column_texts(tab, header(tab, "started (UTC)"))[row] == f"{utc:%Y-%m-%d %H:%M:%S}"
    assert tab.evaluate(f"document.getElementById('chart-0').data[0].x[{row}]") == utc.replace(tzinfo=None).isoformat()
    titles = tab.evaluate("Array.from(document.querySelectorAll('.xtitle')).map(t => t.textContent)")
    assert titles == ["run start (UTC)"] * 3
    assert tab.errors == []


def test_bars_of_huge_speed_ups_have_finite_centres() -> None:
    """Times near 1e308 µs are read as numbers: (left + right) / 2 of two such edges overflowed to inf (JSON null)."""
    chart = histogram_chart("t", histogram([1.5e308, 1.6e308, 1.7e308]), "speed-up (x)", "operators")

    assert all(math.isfinite(centre) for centre in chart.traces[0]["x"])
    assert all(math.isfinite(width) and width > 0 for width in chart.traces[0]["width"])


def test_without_javascript_the_page_says_what_it_needs(cli, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A viewer that runs no scripts (a mail preview, a locked-down browser) shows the facts and says why the charts
    and the table are empty, rather than a page that looks broken."""
    page = tmp_path / "report.html"
    assert cli("report", str(ROOT / "sample_results"), "--format", "html", "-o", str(page)).code == 0
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    browser.send("Emulation.setScriptExecutionDisabled", {"value": True}, session=session)
    browser.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
    tab = Tab(browser, session)
    tab.wait_for("document.readyState === 'complete'")

    assert tab.evaluate("document.querySelectorAll('.fact').length") >= 9
    shown = tab.evaluate("Array.from(document.querySelectorAll('.noscript')).map(p => p.innerText).join(' ')")
    assert "JavaScript" in shown


def test_op_type_labels_are_thinned_on_a_phone(cli, show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """25 op types under a 390 px chart: plotly leaves out labels that do not fit (its automatic tick mode)."""
    ops = [(f"l{i}/op", f"OpType{i:02d}Name", 100.0 + i, 50.0) for i in range(30)]
    folder = write_ops(tmp_path / "results", ops).parent
    page = tmp_path / "many.html"
    assert cli("report", str(folder), "--format", "html", "-o", str(page)).code == 0

    tab = show(page, PHONE)

    captions = tab.evaluate("Array.from(document.querySelectorAll('.chart figcaption')).map(c => c.textContent)")
    index = next(i for i, caption in enumerate(captions) if caption.startswith("Time saved per op type"))
    assert tab.evaluate(f"document.querySelectorAll('#chart-{index} .xtick text').length") < 20
    assert tab.errors == []


def test_the_inlined_library_cannot_close_its_script_element_in_any_case(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """HTML ends a script element at `</script` in any letter case; another plotly release could hold `</SCRIPT`."""
    from aoe_runner.render.html import assets

    bundle = tmp_path / "plotly.min.js"
    bundle.write_text('var a = "</SCRIPT><script>alert(1)</Script >", b = /<\\/script>/;', encoding="utf-8")
    monkeypatch.setattr(assets, "plotly_bundle", lambda: bundle)

    inlined = assets.plotly_js.__wrapped__()

    assert "</script" not in inlined.lower()
    assert inlined == 'var a = "<\\/SCRIPT><script>alert(1)<\\/Script >", b = /<\\/script>/;'


def test_a_run_whose_result_files_cannot_be_read_is_named(show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A run recorded result files that are gone (cleaned up, or on another host with a shared store): its time saved
    is unknown, not zero, and the page says which runs that is."""
    page = tmp_path / "history.html"
    home = history_page(tmp_path, page)
    gone = next(run for run in home.manifests() if run["result_files"])
    for result in gone["result_files"]:
        (tmp_path / "home" / "runs" / gone["id"] / result["recorded"]).unlink()
    assert aoe_runner(home, "runs", "report", "-o", str(page)).returncode == 0

    tab = show(page)

    warnings = tab.evaluate("(document.querySelector('.warnings') || {}).textContent || ''")
    assert gone["id"] in warnings and "are not here (removed, or on another host)" in warnings
    assert tab.errors == []


def test_a_run_result_file_that_is_damaged_is_an_error_named_on_the_page(tmp_path: Path) -> None:
    """A damaged file is not a missing one: one error line naming it and why, the same words in the warning box, and
    exit 4, as `report` gives for it (it was passed as gone, with exit 0)."""
    page = tmp_path / "history.html"
    home = history_page(tmp_path, page)
    run = next(run for run in home.manifests() if run["result_files"])
    damaged = tmp_path / "home" / "runs" / run["id"] / run["result_files"][0]["recorded"]
    damaged.write_text("{corrupt")

    made = aoe_runner(home, "runs", "report", "-o", str(page))

    assert made.returncode == 4, made.stderr
    (line,) = [line for line in made.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: {damaged}: invalid JSON at line 1 column 2")
    text = page.read_text()
    assert f"run {run['id']}: {damaged}: invalid JSON at line 1 column 2" in text and "are not here" not in text


def test_extreme_figures_are_short_and_never_zero(cli, show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A time near 1e300 µs (the longest a result file's time may be) was written out in 300 digits, and 1 ns (1e-6 µs)
    of time saved showed as 0."""
    ops = [("huge", "Conv2D", 1.7e299, 1.0), ("tiny", "Relu", 2e-6, 1e-6)]
    folder = write_ops(tmp_path / "results", ops).parent
    page = tmp_path / "extreme.html"
    assert cli("report", str(folder), "--format", "html", "-o", str(page)).code == 0
    text = page.read_text(encoding="utf-8")
    assert "<b>1.7e+299 µs</b>" in text  # operator time saved
    tab = show(page)

    cells = tab.evaluate("[...document.querySelectorAll('#table tbody td.number')].map(td => td.textContent)")
    assert "1.7e+299" in cells and "1e-06" in cells  # as the facts write them: before and saved of huge, saved of tiny
    assert all(len(shown) <= 12 for shown in cells)
    assert "0" not in cells
    assert tab.errors == []


def test_a_tiny_subgraph_saving_in_the_history_hover_is_not_zero(tmp_path: Path) -> None:
    """The subgraph line's hover wrote `%{y:,.3f} ms`, plotly's 0.000 for 1e-6 ms; it is figure()'s text now."""
    from aoe_runner.render.html.history_page import history_page
    from aoe_runner.runs.history import RunStore
    from aoe_runner.runs.savings import HistoryRun

    home = Home(tmp_path)
    (tmp_path / "bank").mkdir()
    tune = ("tune", str(SIMULATOR), "--mode", "op", "--force", "--bank", str(tmp_path / "bank"), "--grace", "0.5s", "--")
    assert aoe_runner(home, *tune, "progress", "--reports", "1", "--interval", "0.05").returncode == 0
    store = RunStore(tmp_path / "home")
    manifest = store.load_or_warn(store.list()[0].id)
    assert manifest is not None

    charts = history_page([HistoryRun(manifest, 1.0, 1e-6), HistoryRun(manifest, 2.0, 1.7e308)], None).charts
    subgraph = next(trace for trace in charts[0].traces if trace["name"].startswith("subgraph"))
    assert [text.partition(": ")[2] for text in subgraph["hovertext"]] == ["1e-06 ms", "1.7e+308 ms"]


@pytest.mark.parametrize(
    ("value", "places", "shown"),
    [
        (1e308, 1, "1e+308"),
        (-2.5e15, 2, "-2.5e+15"),
        (1e-6, 3, "1e-06"),
        (0.0004, 3, "0.0004"),
        (0.0005, 3, "0.001"),  # rounds up to what the places show: not below them
        (0.0, 3, "0.000"),
        (1234.5678, 1, "1,234.6"),
        (float("inf"), 1, "inf"),
        (float("nan"), 3, "nan"),
    ],
)
def test_a_figure_for_people_is_short_and_zero_only_for_zero(value: float, places: int, shown: str) -> None:
    assert figure(value, places) == shown


@given(st.floats(), st.integers(0, 4))
def test_any_figure_is_short_and_zero_only_for_zero(value: float, places: int) -> None:
    shown = figure(value, places)
    assert len(shown) <= 27  # "999,999,999,999,999.0000" at most
    digits = [char for char in shown.partition("e")[0] if char.isdigit()]
    assert (set(digits) <= {"0"}) == (value == 0 or not math.isfinite(value))  # inf and nan: no digits
