"""`--framework auto`: the framework is read from the script's imports, and from its local modules' imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoe_runner.errors import UsageError
from aoe_runner.frameworks.detect import detect_framework
from aoe_runner.frameworks.kinds import Framework


def script(tmp_path: Path, text: str, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("source", "framework", "package"),
    [
        ("import tensorflow as tf\n", Framework.TF, "tensorflow"),
        ("from npu_bridge.npu_init import *\n", Framework.TF, "npu_bridge"),
        ("import npu_device\n", Framework.TF, "npu_device"),
        ("import mindspore as ms\nfrom mindspore import nn\n", Framework.MINDSPORE, "mindspore"),
        ("import torch\nimport torch_npu\n", Framework.PYTORCH, "torch"),
        (
            "def main():\n    try:\n        import torch_npu\n    except ImportError:\n        pass\n",
            Framework.PYTORCH,
            "torch_npu",
        ),
    ],
)
def test_the_framework_is_the_one_the_script_imports(tmp_path: Path, source: str, framework: Framework, package: str) -> None:
    found = detect_framework(script(tmp_path, source))
    assert found.framework is framework
    assert f"imports {package}, train.py line" in found.evidence


def test_imports_are_followed_into_local_modules_and_packages(tmp_path: Path) -> None:
    script(tmp_path, "import helpers\n", "helpers.py")
    script(tmp_path, "from . import net\n", "models/__init__.py")
    script(tmp_path, "import os\nimport mindspore.nn\n", "models/net.py")
    found = detect_framework(script(tmp_path, "import os, sys\nfrom models import build\n"))
    assert found.framework is Framework.MINDSPORE
    assert "models/net.py line 2" in found.evidence


def test_a_local_module_that_is_not_python_is_skipped(tmp_path: Path) -> None:
    script(tmp_path, "this is not python (\n", "broken.py")
    assert detect_framework(script(tmp_path, "import broken\nimport torch\n")).framework is Framework.PYTORCH


def test_an_import_cycle_between_local_modules_ends(tmp_path: Path) -> None:
    script(tmp_path, "import b\n", "a.py")
    script(tmp_path, "import a\nimport tensorflow\n", "b.py")
    assert detect_framework(script(tmp_path, "import a\n")).framework is Framework.TF


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("import os\nprint('hello')\n", "imports none of tensorflow, mindspore, torch"),
        ("import torch\nimport tensorflow\n", "imports more than one framework (pytorch: torch, train.py line 1; tf: tensorflow"),
        ("def broken(:\n", "cannot read its imports (line 1"),
        ("import torch\x00\n", "cannot read its imports"),
    ],
)
def test_none_several_or_an_unreadable_script_asks_for_the_framework(tmp_path: Path, source: str, says: str) -> None:
    with pytest.raises(UsageError) as raised:
        detect_framework(script(tmp_path, source))
    assert says in raised.value.message
    assert "pass --framework tf|mindspore|pytorch" in raised.value.message


def test_a_wrapper_that_is_not_python_asks_for_the_framework(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"not a \.py script"):
        detect_framework(script(tmp_path, "#!/bin/sh\npython train.py\n", "run.sh"))


def test_a_fifo_named_like_a_script_is_never_opened_for_reading(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "train.py")  # a reader would block forever
    with pytest.raises(UsageError, match="not a regular file"):
        detect_framework(tmp_path / "train.py")
