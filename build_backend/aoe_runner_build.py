"""aoe-runner's build backend: setuptools, with report's hot modules compiled by mypyc wherever this machine can.

`pip install .` builds a wheel through build_wheel below. AOE_RUNNER_MYPYC chooses the variant:
- unset or `auto` (the default): compiled when it can be, else plain Python. mypyc comes from the build
  environment when it is there (`--no-build-isolation` with mypy installed), else this machine's pip fetches mypy
  (wheels only) into a scratch directory; a C compiler and Python's headers do the rest. Any failure on the way (no
  pip, mypy not obtainable, no compiler, mypyc refusing the code) builds the plain wheel instead, and says why on
  pip's verbose output (`pip install -v .`).
- `1`: compiled or fail, with the reason.
- `0`: plain Python.

`aoe-runner --version` says which variant is installed. Editable installs and sdists are always plain Python (an
edit to a compiled module would not take effect). Every other hook is setuptools'.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 - every other hook as setuptools has it

VARIABLE = "AOE_RUNNER_MYPYC"
COMPILE_VARIABLE = "AOE_RUNNER_COMPILE"  # setup.py compiles when it is 1: set only for the compiled attempt
BUILD_DIR_VARIABLE = "AOE_RUNNER_BUILD_DIR"  # setup.py builds there, so no attempt leaves files for the next
MYPY = "mypy>=2.0,<3"  # the mypy whose mypyc tests/packaging checks
FETCH_TIMEOUT_S = 600
COMPILE_TIMEOUT_S = 1800
_BUILD = "import json, sys\nfrom setuptools import build_meta as b\nprint(b.build_wheel(sys.argv[1], json.loads(sys.argv[2])))"


def build_wheel(
    wheel_directory: str, config_settings: dict[str, object] | None = None, metadata_directory: str | None = None
) -> str:
    choice = (os.environ.get(VARIABLE) or "auto").strip().lower()
    if choice not in ("auto", "0", "1"):
        raise SystemExit(f"{VARIABLE}={choice!r}: use 1 (compiled), 0 (plain Python) or leave it unset (compiled if possible)")
    if choice != "0":
        with tempfile.TemporaryDirectory(prefix="aoe-runner-build-") as scratch:
            built, why = _compiled_wheel(Path(scratch), wheel_directory, config_settings)
        if built is not None:
            _say(f"built the compiled variant (mypyc): {built}")
            return built
        if choice == "1":
            raise SystemExit(f"{VARIABLE}=1: the compiled variant could not be built: {why}")
        _say(f"building plain Python instead of the compiled variant: {why}")
    with tempfile.TemporaryDirectory(prefix="aoe-runner-build-") as scratch:
        os.environ[BUILD_DIR_VARIABLE], os.environ[COMPILE_VARIABLE] = scratch, "0"
        try:
            return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
        finally:
            del os.environ[BUILD_DIR_VARIABLE], os.environ[COMPILE_VARIABLE]


def _compiled_wheel(scratch: Path, wheel_directory: str, config_settings: dict[str, object] | None) -> tuple[str | None, str]:
    """The compiled wheel's file name, built in a separate process (a failed compile leaves nothing in this one),
    or None and why not."""
    paths = [entry for entry in sys.path if entry]
    if importlib.util.find_spec("mypyc") is None:
        fetched, why = _fetch_mypy(scratch / "mypy")
        if fetched is None:
            return None, why
        paths.insert(0, str(fetched))
    env = {**os.environ, COMPILE_VARIABLE: "1", BUILD_DIR_VARIABLE: str(scratch / "build"), "PYTHONPATH": os.pathsep.join(paths)}
    command = [sys.executable, "-c", _BUILD, wheel_directory, json.dumps(config_settings or {})]
    done, why = _run(command, env, COMPILE_TIMEOUT_S, "mypyc", "mypyc or the C compiler failed")
    return (done.stdout.strip().splitlines()[-1], "") if done is not None else (None, why)


def _fetch_mypy(target: Path) -> tuple[Path | None, str]:
    """mypy (with mypyc) installed into target by this interpreter's pip, from wheels, with pip's own settings: its
    index, proxy and certificates as the user configured them. The build environment's isolation is left out of
    pip's environment, or it would not find its own pip."""
    _say(f"fetching {MYPY} for mypyc (wheels only, with pip's settings)")
    isolation = ("PYTHONPATH", "PYTHONNOUSERSITE", "PIP_BUILD_TRACKER", "PIP_REQ_TRACKER")
    env = {name: value for name, value in os.environ.items() if name not in isolation}
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input"]
    command += ["--only-binary", ":all:", "--retries", "1", "--timeout", "30", "--target", str(target), MYPY]
    done, why = _run(command, env, FETCH_TIMEOUT_S, f"fetching {MYPY}", f"{MYPY} could not be installed for the build")
    return (target, "") if done is not None else (None, why)


def _run(
    command: list[str], env: dict[str, str], timeout_s: int, slow: str, failed: str
) -> tuple[subprocess.CompletedProcess[str] | None, str]:
    """The finished command, or None and why not: `slow` ran past timeout_s, or `failed` (with its last error line)."""
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return None, f"{slow} took more than {timeout_s} s"
    if done.returncode != 0:
        return None, f"{failed}: {_last_line(done.stderr or done.stdout)}"
    return done, ""


def _last_line(text: str) -> str:
    """The last line that says error, else the last line: what a failed build's output ends with is often a warning."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    line = (errors or lines or ["no message"])[-1]
    return line if len(line) <= 300 else line[:300] + "..."


def _say(message: str) -> None:
    print(f"aoe-runner build: {message}", file=sys.stderr, flush=True)
