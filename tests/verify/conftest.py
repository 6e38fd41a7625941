"""The home every verify test runs in: a bank with one tuned file, beside the aoe-runner home and lock directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tune.runner import Home


@pytest.fixture
def home(tmp_path: Path) -> Home:
    bank = tmp_path / "bank" / "Ascend910B3" / "cube"
    bank.mkdir(parents=True)
    (bank / "MatMul.bin").write_bytes(b"tuned")
    return Home(tmp_path)
