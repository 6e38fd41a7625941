"""Which variant of aoe-runner is installed: report's hot modules compiled by mypyc, or plain Python.

pip hides what the build did (build_backend/aoe_runner_build.py falls back to plain Python when it cannot
compile), so `aoe-runner --version` and the crash log say it. Asked of the import system (where each module would be
loaded from), without importing them.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util

# setup.py compiles the same modules (tests/packaging checks that the lists agree)
HOT_MODULES = (
    "aoe_runner.results.parsed",
    "aoe_runner.report.entries",
    "aoe_runner.report.merge",
    "aoe_runner.report.summary_data",
)
COMPILED = "compiled with mypyc"
PLAIN = "plain Python"


def variant() -> str:
    """`compiled with mypyc`, `plain Python`, or which modules are compiled when only some are (a mixed install)."""
    compiled = [name for name in HOT_MODULES if _is_extension(name)]
    if len(compiled) == len(HOT_MODULES):
        return COMPILED
    if not compiled:
        return PLAIN
    return f"{PLAIN}, but {', '.join(compiled)} {COMPILED}"


def _is_extension(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
    return origin is not None and origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
