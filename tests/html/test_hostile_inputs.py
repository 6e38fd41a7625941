"""Pages made from unlucky or hostile inputs, opened in headless Chromium: long unbroken names at phone width,
markup in run ids, equal speed-ups, a missing charting library."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.html.conftest import PHONE
from tests.html.pages import verify_page

LONG_DIRECTORY = "a_rather_long_directory_name_without_any_spaces/and_another_level_of_nesting_for_the_models"


def fits(tab) -> bool:  # type: ignore[no-untyped-def]
    """Nothing on the page is wider than the window (a phone's layout viewport widens to the widest content)."""
    return tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth && window.innerWidth <= 400")  # type: ignore[no-any-return]


def test_a_long_script_name_fits_a_phone_on_an_empty_history(cli, show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    script = f"/srv/{LONG_DIRECTORY}/train_with_a_long_name.py"
    page = tmp_path / "history.html"
    assert cli("runs", "report", "--script", script, "-o", str(page)).code == 0

    tab = show(page, PHONE)

    assert tab.errors == []
    assert script in tab.evaluate("document.querySelector('main .note').textContent")
    assert fits(tab)


def test_a_verify_page_of_a_deep_script_fits_a_phone(show, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.tune.runner import SIMULATOR

    script = tmp_path / LONG_DIRECTORY / "train.py"
    script.parent.mkdir(parents=True)
    shutil.copy(SIMULATOR, script)
    page = tmp_path / "verify.html"
    verify_page(tmp_path, page, script)

    tab = show(page, PHONE)

    assert tab.errors == []
    assert str(script) in tab.evaluate("Array.from(document.querySelectorAll('main .note')).map(p => p.textContent).join()")
    assert fits(tab)
