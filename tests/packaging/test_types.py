"""The package type-checks: mypy, installed with the test extras, finds no error in aoe_runner/ with the settings
of pyproject.toml's [tool.mypy] (unused `type: ignore` comments count as errors)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # runs mypy over the whole package


def test_the_package_type_checks(tmp_path: Path) -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Success: no issues found" in checked.stdout
