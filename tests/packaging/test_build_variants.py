"""`pip install .` builds the compiled variant where it can and plain Python where it cannot, never failing for
want of a compiler or of mypy; AOE_RUNNER_MYPYC=1 fails instead, with the reason; and --version says which."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from report_bench import COMPILED_LAUNCHER  # noqa: E402  (runs the unpacked wheel, not the editable install)

pytestmark = pytest.mark.slow  # each builds a wheel of the checkout with pip

PIP = [sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-deps", "-v"]


def _wheel(tmp_path: Path, env: dict[str, str], isolated: bool = False) -> subprocess.CompletedProcess[str]:
    isolation = [] if isolated else ["--no-build-isolation"]
    environment = {k: v for k, v in os.environ.items() if k != "AOE_RUNNER_MYPYC"} | env
    command = [*PIP, *isolation, "-w", str(tmp_path / "wheels"), str(ROOT)]
    return subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600, check=False)


def _version_of(wheel: Path, tmp_path: Path) -> str:
    tree = tmp_path / "tree"
    with zipfile.ZipFile(wheel) as unpacked:
        unpacked.extractall(tree)
    shown = subprocess.run(
        [sys.executable, "-c", COMPILED_LAUNCHER, str(tree), "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    return shown.stdout.strip()


@pytest.mark.parametrize(
    "env", [{"CC": "/bin/false"}, {"AOE_RUNNER_MYPYC": "0"}], ids=["no working C compiler", "AOE_RUNNER_MYPYC=0"]
)
def test_the_plain_wheel_where_the_compiled_one_cannot_or_must_not_be_built(tmp_path: Path, env: dict[str, str]) -> None:
    built = _wheel(tmp_path, env)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "wheels").glob("aoe_runner-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [name for name in names if name.endswith(".so")]
    assert "aoe_runner/frameworks/launcher.py" in names  # run by path, so it must ship as a file
    fakes = ("tests/", "mindspore/", "torch_npu/", "aoe_runner/simulator")  # the test fakes never ship
    assert not [name for name in names if name.startswith(fakes) or "/fakes/" in name]
    assert _version_of(wheel, tmp_path).endswith("(plain Python)")
    if "CC" in env:  # pip -v shows why
        assert "building plain Python instead of the compiled variant: mypyc or the C compiler failed" in built.stderr


def test_mypyc_1_refuses_to_fall_back(tmp_path: Path) -> None:
    built = _wheel(tmp_path, {"CC": "/bin/false", "AOE_RUNNER_MYPYC": "1"})
    assert built.returncode != 0
    assert "AOE_RUNNER_MYPYC=1: the compiled variant could not be built: mypyc or the C compiler failed" in built.stderr
    assert not list((tmp_path / "wheels").glob("*.whl"))


def test_an_unknown_choice_is_refused(tmp_path: Path) -> None:
    built = _wheel(tmp_path, {"AOE_RUNNER_MYPYC": "yes"})
    assert built.returncode != 0 and "AOE_RUNNER_MYPYC='yes': use 1 (compiled), 0 (plain Python)" in built.stderr


def test_the_plain_wheel_when_mypy_cannot_be_obtained(tmp_path: Path) -> None:
    """An isolated build with an index that holds setuptools and nothing else: no mypy to fetch, so plain Python."""
    index = tmp_path / "index"
    fetched = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:", "-d", str(index), "setuptools>=68"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if fetched.returncode != 0:
        why = f"no setuptools wheel to build with offline: {fetched.stderr.strip()[-300:]}"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    built = _wheel(tmp_path, {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(index)}, isolated=True)
    assert built.returncode == 0, built.stderr[-2000:]
    assert "mypy>=2.0,<3 could not be installed for the build" in built.stderr
    (wheel,) = (tmp_path / "wheels").glob("aoe_runner-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl") and _version_of(wheel, tmp_path).endswith("(plain Python)")
