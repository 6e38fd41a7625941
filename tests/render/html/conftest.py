"""Fixtures for the HTML pages: headless Chromium (skipped locally when missing, a failure in CI), screenshots."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.render.html.browser import Browser, Tab, find_chromium

SCREENSHOTS = Path(os.environ.get("AOE_RUNNER_SCREENSHOTS", ROOT / "artifacts" / "screenshots"))
DESKTOP, PHONE = 1280, 390


@pytest.fixture(scope="session")
def chromium() -> str:
    found = find_chromium()
    if found is None:
        why = "chromium is not installed (apt-get install chromium); the browser tests of the HTML pages need it"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why}; in CI this is a failure, not a skip (.ci/run installs it)")
        pytest.skip(why)
    return found


@pytest.fixture(scope="session")
def browser(chromium: str) -> Iterator[Browser]:
    started = Browser(chromium)
    yield started
    started.close()


@pytest.fixture
def show(browser: Browser, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Open a page at a width, wait until every chart is drawn, take a screenshot named after the test."""

    def open_page(page: Path, width: int = DESKTOP) -> Tab:
        tab = browser.open(page, width)
        tab.wait_for("document.body.dataset.drawn === document.body.dataset.charts")
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.originalname).strip("-")
        tab.screenshot(SCREENSHOTS / f"{name}-{width}.png")
        return tab

    return open_page
