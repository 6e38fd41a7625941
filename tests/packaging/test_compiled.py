"""The compiled variant (the default wheel, built by build_backend/ with mypyc) builds, loads its compiled modules,
says so in --version and writes what plain Python writes, byte for byte. The benchmark's figures for it mean nothing otherwise, and mypyc can refuse code
that plain Python runs (mypyc 2.4 stops with an internal error on reversed(list[Any])).

Without mypyc (the `test` extra installs mypy) or a C compiler the tests are skipped, except in CI (CI=true).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aoe_runner.common.build_variant import HOT_MODULES
from tests.conftest import ROOT, SAMPLES

sys.path.insert(0, str(ROOT / "bench"))
from generate_corpus import write_corpus  # noqa: E402
from installs import compiled_tree as build_compiled_tree  # noqa: E402
from report_bench import COMPILED_LAUNCHER  # noqa: E402

pytestmark = pytest.mark.slow  # builds the package with mypyc and a C compiler


@pytest.fixture(scope="module")
def compiled_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("mypyc") is None or shutil.which("cc") is None:
        why = "the compiled variant needs mypy's mypyc (the `test` extra) and a C compiler (cc)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why}; in CI this is a failure, not a skip")
        pytest.skip(why)
    tree = build_compiled_tree(tmp_path_factory.mktemp("compiled"))
    assert tree is not None, "mypyc could not compile the hot modules (its last line is printed above)"
    return tree


def _run(command: list[str], home: Path, *arguments: str, cache: str = "off") -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "AOE_RUNNER_HOME": str(home), "AOE_RUNNER_CACHE": cache}
    return subprocess.run([*command, *arguments], capture_output=True, env=env, timeout=300, check=False)


def test_the_hot_modules_load_compiled(compiled_tree: Path, tmp_path: Path) -> None:
    probe = "; ".join(f"import {name}; print({name}.__file__)" for name in HOT_MODULES)
    launcher = COMPILED_LAUNCHER.replace("from aoe_runner.__main__ import main\nraise SystemExit(main())\n", probe)
    shown = _run([sys.executable, "-c", launcher, str(compiled_tree)], tmp_path)
    files = shown.stdout.decode().split()
    assert shown.returncode == 0 and len(files) == len(HOT_MODULES), shown.stderr.decode()
    assert all(file.endswith(".so") and file.startswith(str(compiled_tree)) for file in files), files
    shown = _run([sys.executable, "-c", COMPILED_LAUNCHER, str(compiled_tree), "--version"], tmp_path)
    assert shown.stdout.decode().endswith("(compiled with mypyc)\n"), shown


@pytest.mark.parametrize("cache", ["off", "on"])
def test_the_compiled_variant_writes_what_plain_python_writes(compiled_tree: Path, tmp_path: Path, cache: str) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, files=6, reports=2, operators=300, pool=900, seed=17, shape="random", indent=2)
    plain = [sys.executable, "-m", "aoe_runner"]
    compiled = [sys.executable, "-c", COMPILED_LAUNCHER, str(compiled_tree)]
    for arguments in ([str(SAMPLES), "--format", "json"], [str(corpus), "--format", "json"], [str(corpus)]):
        written = []
        for name, command in (("plain", plain), ("compiled", compiled)):
            home = tmp_path / f"{name}-home"
            result = _run(command, home, "report", *arguments, cache=cache)
            if cache == "on":  # a second report, which reads the merged set the first one stored
                result = _run(command, home, "report", *arguments, cache=cache)
            written.append((result.returncode, result.stdout, result.stderr))
        assert written[0][0] in (0, 1), written[0][2].decode()
        assert written[0] == written[1], arguments
