"""frameworks/launcher.py on its own: standard library only, Python 3.7 syntax, and the script's exit as its own."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from aoe_runner.frameworks.launcher import __file__ as LAUNCHER
from tests.tune.runner import ROOT

FAKE_SITE = ROOT / "tests" / "fakes" / "site"


def launch(
    tmp_path: Path, script: str, *switch: str, arguments: tuple[str, ...] = (), **env: str
) -> subprocess.CompletedProcess[str]:
    """The launcher under `python -S`: no site-packages, so neither aoe_runner nor any dependency can be imported."""
    (tmp_path / "train.py").write_text(script, encoding="utf-8")
    command = [
        sys.executable,
        "-S",
        LAUNCHER,
        "--report",
        str(tmp_path / "switch.json"),
        *switch,
        "--",
        str(tmp_path / "train.py"),
    ]
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": str(FAKE_SITE), **env}
    return subprocess.run([*command, *arguments], capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=60)


def test_it_needs_nothing_beyond_the_standard_library(tmp_path: Path) -> None:
    script = "import sys\nprint(sorted(m for m in sys.modules if m.startswith(('aoe_runner', 'runpy'))))\nprint(sys.argv)\n"
    done = launch(tmp_path, script, "--mindspore-job-type", "2", arguments=("a", "--b"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", f"[{str(tmp_path / 'train.py')!r}, 'a', '--b']"]
    report = json.loads((tmp_path / "switch.json").read_text())
    assert report["framework"] == "mindspore" and len(report["calls"]) == 2 and "error" not in report


def test_it_is_written_in_python_3_7_syntax() -> None:
    ast.parse(Path(LAUNCHER).read_text(encoding="utf-8"), feature_version=(3, 7))


@pytest.mark.parametrize(("ending", "code", "stderr"), [("sys.exit(7)", 7, ""), ("raise SystemExit('no data')", 1, "no data\n")])
def test_the_scripts_exit_is_the_processs(tmp_path: Path, ending: str, code: int, stderr: str) -> None:
    done = launch(tmp_path, f"import sys\n{ending}\n", "--torch-dump", str(tmp_path / "dump"))
    assert (done.returncode, done.stderr) == (code, stderr)
    assert (tmp_path / "dump").is_dir()  # torch_npu's set_aoe made it


def test_ctrl_c_in_the_script_ends_the_process_as_python_would(tmp_path: Path) -> None:
    done = launch(tmp_path, "import atexit\natexit.register(print, 'at exit')\nraise KeyboardInterrupt\n", "--torch-jit-compile")
    assert done.returncode == -signal.SIGINT
    assert done.stdout == "at exit\n"
    assert done.stderr.startswith("Traceback") and "launcher" not in done.stderr and done.stderr.endswith("KeyboardInterrupt\n")


def test_a_switch_the_framework_refuses_is_reported_and_the_script_not_run(tmp_path: Path) -> None:
    done = launch(tmp_path, "print('ran')\n", "--mindspore-job-type", "1", FAKE_MINDSPORE_VERSION="2.3.0")
    assert done.returncode == 0  # 2.3: set_context takes the job type
    done = launch(tmp_path, "print('ran')\n", "--torch-dump", "x", PYTHONPATH="")
    assert done.returncode == 4 and done.stdout == ""
    assert done.stderr.startswith("aoe-runner launcher: cannot switch AOE on: torch_npu is not importable by")
    assert "No module named 'torch_npu'" in json.loads((tmp_path / "switch.json").read_text())["error"]


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--report", "r"],
        ["--report", "r", "--mindspore-job-type", "3", "--", "s.py"],
        ["--report", "r", "--other", "--", "s.py"],
    ],
)
def test_a_malformed_command_line_is_exit_2(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-S", LAUNCHER, *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("usage: launcher.py")


def test_the_script_imports_what_python_script_would(tmp_path: Path) -> None:
    """A module beside the script named like a standard one, and a framework vendored beside it, are the ones found."""
    (tmp_path / "json.py").write_text("MINE = True\n", encoding="utf-8")
    vendored = tmp_path / "torch_npu"
    vendored.mkdir()
    (vendored / "__init__.py").write_text(
        "from types import SimpleNamespace\n__version__ = 'vendored'\nseen = []\n"
        "npu = SimpleNamespace(set_compile_mode=lambda jit_compile: seen.append(jit_compile))\n",
        encoding="utf-8",
    )
    script = (
        "import json, sys, torch_npu\nprint(getattr(json, 'MINE', False), torch_npu.__version__, torch_npu.seen, sys.path[0])\n"
    )
    done = launch(tmp_path, script, "--torch-jit-compile")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"True vendored [True] {tmp_path}\n"
    assert json.loads((tmp_path / "switch.json").read_text())["version"] == "vendored"


def test_the_report_is_json_whatever_the_text(tmp_path: Path) -> None:
    from aoe_runner.frameworks.launcher import _json

    value = {"a": ['"quoted"\\', "tab\tnew\nline", "é", "\U0001f600", "\udcff", None]}
    assert json.loads(_json(value)) == value
