"""`report` on a small input loads only what it needs: start-up is most of its time there.

Each command runs in a fresh interpreter, as a user runs it, and lists the modules loaded by its end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLES

LOADED_MODULES = """
import atexit, contextlib, io, json, sys
from aoe_runner.__main__ import main
sys.argv = ["aoe-runner", *sys.argv[1:]]
atexit.register(lambda: (sys.__stdout__.write(json.dumps(sorted(sys.modules))), sys.__stdout__.flush()))
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main()  # report does not return here: it leaves once its result is out, after the exit handlers
raise SystemExit(code)
"""
NEVER_FOR_REPORT = [
    "multiprocessing",  # worker processes start only for a large corpus
    "concurrent.futures",
    "jsonschema",  # validate
    "psutil",  # preflight, tune
    "sqlite3",  # the run store (--run)
    "aoe_runner.preflight",
    "aoe_runner.tune",
    "aoe_runner.runs",
    "aoe_runner.verify",
    "aoe_runner.results.validation",
    "aoe_runner.report.diff",  # --diff
]
NEVER_FOR_JSON = [
    "tabulate",  # tables
    "aoe_runner.render.tables",
    "aoe_runner.report.models",  # the pydantic models: JSON is written from plain data
    "aoe_runner.report.legacy",  # only when a legacy Auto Tune file is read
    "statistics",  # with decimal and fractions behind it
]


def _fresh_python(tmp_path: Path, program: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """`program` in a fresh interpreter with its own aoe-runner home, as a user's command starts."""
    env = {"AOE_RUNNER_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-c", program, *arguments], capture_output=True, text=True, cwd=ROOT, env=env, check=False
    )


def _loaded(tmp_path: Path, *arguments: str, codes: tuple[int, ...] = (0,)) -> set[str]:
    done = _fresh_python(tmp_path, LOADED_MODULES, *arguments)
    assert done.returncode in codes, done.stderr
    return set(json.loads(done.stdout))


def _offending(loaded: set[str], never: list[str]) -> list[str]:
    return sorted(name for name in loaded for prefix in never if name == prefix or name.startswith(prefix + "."))


@pytest.mark.parametrize("repeat", ["first report", "second report (from the cache)"])
def test_report_as_json_on_a_small_input_loads_no_module_it_does_not_need(tmp_path: Path, repeat: str) -> None:
    arguments = ("report", str(SAMPLES), "--format", "json")
    never = NEVER_FOR_REPORT + NEVER_FOR_JSON
    if repeat.startswith("second"):
        _loaded(tmp_path, *arguments)
        never += ["pydantic", "aoe_runner.results.model", "aoe_runner.results.loader"]  # every file is in the cache
    assert _offending(_loaded(tmp_path, *arguments), never) == []


def test_a_first_report_of_plain_training_files_loads_no_pydantic(tmp_path: Path) -> None:
    """A plain current-format file (most files) is read from its typed structs: the normaliser and pydantic (about
    100 ms together) load only for a file that needs them."""
    plain = SAMPLES / "training_opat" / "aoe_result_opat_20260310142233517_41237.json"
    never = [*NEVER_FOR_REPORT, *NEVER_FOR_JSON, "pydantic", "aoe_runner.results.model", "aoe_runner.results.loader"]
    assert _offending(_loaded(tmp_path, "report", str(plain), "--format", "json"), never) == []


def test_report_as_a_table_on_a_small_input_loads_no_module_it_does_not_need(tmp_path: Path) -> None:
    assert _offending(_loaded(tmp_path, "report", str(SAMPLES)), NEVER_FOR_REPORT) == []


def test_runs_list_loads_no_model_of_a_run_record(tmp_path: Path) -> None:
    """`runs list` reads the index alone: no pydantic, no manifest or host-facts model, no preflight (about 200 ms)."""
    never = [
        "pydantic",
        "aoe_runner.runs.manifest",
        "aoe_runner.runs.blobs",
        "aoe_runner.preflight",
        "aoe_runner.tune",
        "psycopg",
    ]
    assert _offending(_loaded(tmp_path, "runs", "list"), never) == []


def test_preflight_loads_no_pydantic(tmp_path: Path) -> None:
    """Host facts and check results are plain dataclasses: pydantic (about 80 ms) loads only to write or read JSON."""
    never = ["pydantic", "aoe_runner.runs.manifest", "aoe_runner.results", "aoe_runner.tune", "jsonschema", "msgspec"]
    loaded = _loaded(tmp_path, "preflight", codes=(0, 1))  # 1: this host fails some checks, an answer all the same
    assert "aoe_runner.preflight.checks" in loaded
    assert _offending(loaded, never) == []


def test_tune_records_a_run_without_loading_pydantic_or_the_result_models(tmp_path: Path) -> None:
    """Start-up is tune's fixed cost on every run: the run record is written by msgspec, and the result-file models
    load only when the watcher finds a result file (the simulator's `exit 0` writes none)."""
    simulator = str(ROOT / "tests" / "simulator" / "train.py")
    loaded = _loaded(tmp_path, "tune", simulator, "--mode", "op", "--force", "--", "exit", "0", codes=(0,))
    assert "aoe_runner.tune.supervisor" in loaded
    never = ["pydantic", "aoe_runner.results", "aoe_runner.report.models", "jsonschema", "tabulate"]  # forced: no table
    assert _offending(loaded, never) == []


FROZEN_AT_EXIT = """
import atexit, gc, sys
atexit.register(lambda: print("at exit", gc.get_freeze_count() > 0, flush=True))  # runs after main()'s handler
from aoe_runner.__main__ import main
sys.argv = ["aoe-runner", *sys.argv[1:]]
code = main()
print("before exit", gc.get_freeze_count() > 0, flush=True)
sys.exit(code)
"""


@pytest.mark.parametrize("arguments", [("--help",), ("validate", str(SAMPLES))])  # report leaves: test_exiting.py
def test_a_command_leaves_the_collector_nothing_to_walk_at_exit(tmp_path: Path, arguments: tuple[str, ...]) -> None:
    """The interpreter's last collections would walk every object of the loaded modules (about 25 ms of each
    command): main() freezes them as the process exits, after the other exit handlers, and not before."""
    done = _fresh_python(tmp_path, FROZEN_AT_EXIT, *arguments)
    assert done.stdout.splitlines()[-2:] == ["before exit False", "at exit True"], done.stderr


@pytest.mark.parametrize("arguments", [("validate", str(SAMPLES)), ("runs", "list")], ids=["validate", "runs list"])
def test_plain_tables_load_no_tabulate(tmp_path: Path, arguments: tuple[str, ...]) -> None:
    """tabulate writes markdown only; the terminal's tables are render/table.py's."""
    assert _offending(_loaded(tmp_path, *arguments, codes=(0, 1, 4)), ["tabulate"]) == []
