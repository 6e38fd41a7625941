"""Packaging hook: with AOE_RUNNER_COMPILE=1 report's hot modules are compiled with mypyc.

build_backend/aoe_runner_build.py sets both variables below; users choose with AOE_RUNNER_MYPYC, which only the
backend reads (its docstring says how `pip install .` decides). AOE_RUNNER_BUILD_DIR keeps each attempt's
intermediate files out of the checkout's build/ directory, so a plain build never picks up what a compiled attempt
left there.
Everything else about the package is in pyproject.toml.
"""

import os

from setuptools import setup

# aoe_runner/common/build_variant.py names the same modules (tests/packaging checks that the lists agree)
HOT_MODULES = [
    "aoe_runner/results/parsed.py",
    "aoe_runner/report/entries.py",
    "aoe_runner/report/merge.py",
    "aoe_runner/report/summary_data.py",
]
BUILD_DIR = os.environ.get("AOE_RUNNER_BUILD_DIR")


def compiled_modules() -> list:  # type: ignore[type-arg]
    if os.environ.get("AOE_RUNNER_COMPILE") != "1":
        return []
    from mypyc.build import mypycify

    # one library per module, placed beside it, so an editable install finds them too
    options = ["--ignore-missing-imports", "--follow-imports=silent", *HOT_MODULES]
    if BUILD_DIR:  # relative: setuptools refuses an extension's absolute source paths
        target = os.path.relpath(os.path.join(BUILD_DIR, "mypyc"))
        return mypycify(options, opt_level="3", separate=True, target_dir=target)
    return mypycify(options, opt_level="3", separate=True)


def build_options() -> dict:  # type: ignore[type-arg]
    if not BUILD_DIR:
        return {}
    return {
        "build": {"build_base": os.path.join(BUILD_DIR, "setuptools")},
        "bdist_wheel": {"bdist_dir": os.path.join(BUILD_DIR, "wheel")},
    }


setup(ext_modules=compiled_modules(), options=build_options())
