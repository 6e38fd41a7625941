"""Packaging hook: with AOE_RUNNER_MYPYC=1 report's hot modules are compiled with mypyc.

    pip install mypy "setuptools>=70"
    AOE_RUNNER_MYPYC=1 pip install --no-build-isolation .

Without it, the default, `pip install .` installs the same modules as plain Python: the tested fallback, and what
a machine without a C compiler gets. Everything else about the package is in pyproject.toml.
"""

import os

from setuptools import setup

HOT_MODULES = [
    "aoe_runner/results/parsed.py",
    "aoe_runner/report/entries.py",
    "aoe_runner/report/merge.py",
    "aoe_runner/report/summary_data.py",
]


def compiled_modules() -> list:  # type: ignore[type-arg]
    if os.environ.get("AOE_RUNNER_MYPYC") != "1":
        return []
    from mypyc.build import mypycify

    # one library per module, placed beside it, so an editable install finds them too
    return mypycify(["--ignore-missing-imports", "--follow-imports=silent", *HOT_MODULES], opt_level="3", separate=True)


setup(ext_modules=compiled_modules())
