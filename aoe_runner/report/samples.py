"""The sample result files shipped with aoe-runner (`report --samples`)."""

from __future__ import annotations

from pathlib import Path

from aoe_runner.errors import InputError


def samples_directory() -> Path:
    """sample_results/ as installed with the package (package data), else beside the package in a clone."""
    from importlib.resources import files

    shipped = Path(str(files("aoe_runner"))) / "sample_results"
    in_clone = Path(__file__).resolve().parent.parent.parent / "sample_results"
    found = next((path for path in (shipped, in_clone) if path.is_dir()), None)
    if found is None:
        raise InputError("--samples", f"the sample result files are not installed (looked in {shipped} and {in_clone})")
    return found
