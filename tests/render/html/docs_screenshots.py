"""Make the four small PNGs under docs/ that docs/guide/html.md shows: `python -m tests.render.html.docs_screenshots`
(needs chromium).

Each is the top of a page as a 1280 px wide window shows it, scaled to 0.6, from the same inputs as the browser tests.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.conftest import ROOT
from tests.render.html.browser import Browser, find_chromium
from tests.render.html.pages import history_page, verify_page
from tests.tune.runner import Home, aoe_runner

DOCS = ROOT / "docs"
SAMPLES = ROOT / "sample_results"


def pages(root: Path) -> dict[str, Path]:
    made = {name: root / f"{name}.html" for name in ("summary", "diff", "verify", "history")}
    home = Home(root / "report")
    (root / "report").mkdir()
    aoe_runner(home, "report", str(SAMPLES), "--format", "html", "-o", str(made["summary"]))
    old, new = SAMPLES / "training_opat", SAMPLES / "retune"
    aoe_runner(home, "report", "--diff", str(old), str(new), "--format", "html", "-o", str(made["diff"]))
    (root / "verify").mkdir()
    verify_page(root / "verify", made["verify"])
    (root / "history").mkdir()
    history_page(root / "history", made["history"])
    return made


def main() -> int:
    executable = find_chromium()
    if executable is None:
        print("chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 1
    browser = Browser(executable)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for name, page in pages(Path(scratch)).items():
                tab = browser.open(page, 1280, 820)
                tab.wait_for("document.body.dataset.drawn === document.body.dataset.charts")
                target = DOCS / f"html-{name}.png"
                tab.screenshot(target, full_page=False, scale=0.6)
                print(f"wrote {target.relative_to(ROOT)} ({target.stat().st_size // 1024} KiB)")
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
