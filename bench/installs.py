"""aoe-runner as users install it, for the benchmarks: `pip install .` of the checkout into a scratch virtualenv.

The default install is the compiled variant wherever mypyc and a C compiler can build it (build_backend/), and
`AOE_RUNNER_MYPYC=0` gives the plain-Python one: the benchmarks measure both, never the developer's editable venv.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIP_QUIET = ["--quiet", "--disable-pip-version-check"]


@dataclass(frozen=True)
class Install:
    python: Path
    variant: str  # what `aoe-runner --version` says in its brackets
    seconds: float  # wall time of `pip install .`

    @property
    def runner(self) -> list[str]:
        return [str(self.python.parent / "aoe-runner")]

    @property
    def compiled(self) -> bool:
        return self.variant == "compiled with mypyc"


def regular_install(venv: Path, plain: bool = False, extras: str = "") -> Install:
    """A fresh venv with `pip install .` of the checkout (AOE_RUNNER_MYPYC=0 when plain; `.[EXTRAS]` when given), its
    time and variant."""
    target = f"{ROOT}[{extras}]" if extras else str(ROOT)
    label = ("AOE_RUNNER_MYPYC=0 " if plain else "") + ("pip install ." + (f"[{extras}]" if extras else ""))
    print(f"{label} into a scratch venv ({venv})", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {**os.environ, "AOE_RUNNER_MYPYC": "0"} if plain else {k: v for k, v in os.environ.items() if k != "AOE_RUNNER_MYPYC"}
    started = time.perf_counter()
    subprocess.run([str(python), "-m", "pip", "install", *PIP_QUIET, target], check=True, capture_output=True, env=env)
    seconds = time.perf_counter() - started
    shown = subprocess.run([str(venv / "bin" / "aoe-runner"), "--version"], capture_output=True, text=True, check=True)
    variant = shown.stdout.strip().partition("(")[2].rstrip(")")
    print(f"  {shown.stdout.strip()}, installed in {seconds:.0f} s", flush=True)
    return Install(python, variant, seconds)


def compiled_tree(scratch: Path) -> Path | None:
    """The default wheel built by the backend from the checkout with this interpreter's mypyc (no download), unpacked:
    a tree to put first on sys.path. None when the wheel is not the compiled one (no mypyc or no C compiler)."""
    wheels = scratch / "wheels"
    env = {k: v for k, v in os.environ.items() if k != "AOE_RUNNER_MYPYC"}
    command = [sys.executable, "-m", "pip", "wheel", *PIP_QUIET, "--no-deps", "--no-build-isolation", "-w", str(wheels)]
    command.append(str(ROOT))
    built = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    found = sorted(wheels.glob("aoe_runner-*.whl"))
    if built.returncode != 0 or not found or found[0].name.endswith("-none-any.whl"):
        print(f"no compiled variant: {(built.stderr.strip().splitlines() or ['plain wheel built'])[-1]}", flush=True)
        return None
    tree = scratch / "compiled"
    with zipfile.ZipFile(found[0]) as wheel:
        wheel.extractall(tree)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "aoe_runner")], check=False, capture_output=True)
    return tree
