"""What every page inlines: plotly.min.js from the installed plotly package, and our own small CSS and JS.

plotly is found without importing it (importing it costs start-up, and the page needs only its JavaScript file).
"""

from __future__ import annotations

import importlib.util
import re
from functools import cache
from pathlib import Path

from aoe_runner.errors import AoeRunnerError, ExitCode

STATIC = Path(__file__).resolve().parent / "static"
PLOTLY_HINT = "pip install 'plotly>=5,<7'"
_SCRIPT_END = re.compile(r"</(script)", re.IGNORECASE)


class HtmlUnavailable(AoeRunnerError):
    """The plotly package (a dependency of aoe-runner) is missing or broken in this install."""

    exit_code = ExitCode.USAGE


@cache
def plotly_bundle() -> Path:
    """Where the plotly package keeps plotly.min.js; HtmlUnavailable when it does not (asked before any work)."""
    spec = importlib.util.find_spec("plotly")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        bundle = Path(location) / "package_data" / "plotly.min.js"
        if bundle.is_file():
            return bundle
    raise HtmlUnavailable(f"--format html needs the plotly package's plotly.min.js, which is not installed ({PLOTLY_HINT})")


@cache
def plotly_js() -> str:
    """plotly.min.js as shipped in the plotly package, safe to put inside a <script> element; HtmlUnavailable when it
    cannot be read as UTF-8 (a damaged install)."""
    bundle = plotly_bundle()
    try:
        text = bundle.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        why = error.strerror if isinstance(error, OSError) else "it is not UTF-8 text"
        raise HtmlUnavailable(f"--format html cannot read {bundle}: {why} (reinstall: {PLOTLY_HINT})") from None
    return _SCRIPT_END.sub(r"<\\/\1", text)  # `</script` ends it in any case


@cache
def own(name: str) -> str:
    """page.css or page.js: our own style and behaviour (sorting, filtering, drawing the charts)."""
    return (STATIC / name).read_text(encoding="utf-8")
