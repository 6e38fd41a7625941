"""Start-up of a regular install: `pip install .` from the checkout into a scratch virtualenv, as the README says.

Never the developer's editable venv: its `python -c pass` alone is heavier (the editable finder imports pathlib).
For each command: CPU instructions counted by valgrind's callgrind, which do not move with the machine's load, as a
multiple of the same venv's `python -c pass`; and the median wall and CPU time of interleaved rounds, with their
spread and the load before and after. The dependency versions of the install are recorded beside the figures.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from installs import Install, regular_install
from report_bench import ROOT, Timing, interleaved, run

ROUNDS = 9
DEPENDENCIES = ("typer", "pydantic", "pydantic-core", "tabulate", "wcwidth", "psutil", "platformdirs")
SUBCOMMANDS = (
    "report", "validate", "preflight", "completion", "tune", "verify", "runs list", "runs show", "runs prune",
    "runs rm", "runs report", "runs push", "bank restore", "bank best", "store init", "store status", "store use",
    "campaign check", "campaign run", "campaign status", "campaign list",
)  # fmt: skip


@dataclass
class StartupFigures:
    timings: dict[str, Timing]
    instructions: dict[str, int]  # empty without valgrind
    versions: dict[str, str]
    report_rss: int  # peak RSS of `report sample_results/`, bytes
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    install: Install

    def ratio(self, name: str) -> float:
        return self.instructions[name] / self.instructions["python -c pass"]


def measure(rounds: int = ROUNDS) -> StartupFigures:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="aoe-bench-install-") as scratch_name:
        scratch = Path(scratch_name)
        install = regular_install(scratch / "venv")
        python, runner = install.python, install.runner
        home = {**os.environ, "AOE_RUNNER_HOME": str(scratch / "home"), "AOE_RUNNER_LOCK_DIR": str(scratch / "locks")}
        samples = str(ROOT / "sample_results")
        subprocess.run([*runner, "report", samples], env=home, capture_output=True, check=False)  # the cache it leaves
        commands = {
            "python -c pass": ([str(python), "-c", "pass"], home),
            "aoe-runner --help": ([*runner, "--help"], home),
            "aoe-runner report sample_results/": ([*runner, "report", samples], home),
            "aoe-runner preflight": ([*runner, "preflight"], home),  # exit 1 without CANN or an NPU: its answer
            "aoe-runner runs list": ([*runner, "runs", "list"], home),
        }
        print("start-up: wall and CPU, interleaved", flush=True)
        timings = interleaved(commands, rounds, ok_codes=(0, 1))
        hanging = _hanging_npu_smi_env(scratch, home)
        hung = {"aoe-runner preflight, npu-smi hanging": ([*runner, "preflight"], hanging)}
        timings.update(interleaved(hung, 3, ok_codes=(0, 1)))
        helps = {f"aoe-runner {name} --help": ([*runner, *name.split(), "--help"], home) for name in SUBCOMMANDS}
        instructions = {}
        if shutil.which("valgrind"):
            print("start-up: instructions (valgrind --tool=callgrind)", flush=True)
            instructions = {label: _instructions(command, env) for label, (command, env) in {**commands, **helps}.items()}
        versions = _versions(python)
        report_rss = run([*runner, "report", samples], env=home, rss=True)[2]
    return StartupFigures(timings, instructions, versions, report_rss, load_before, os.getloadavg(), install)


def _hanging_npu_smi_env(directory: Path, base: dict[str, str]) -> dict[str, str]:
    """PATH with an `npu-smi` that never answers first: preflight must give up on it, not wait."""
    script = directory / "npu-smi"
    script.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(600)\n")
    script.chmod(0o755)
    return {**base, "PATH": f"{directory}{os.pathsep}{base.get('PATH', '')}"}


def _instructions(command: list[str], env: dict[str, str]) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind counted nothing for {' '.join(command)}: {done.stderr[-300:]}")
    return int(found.group(1))


def _versions(python: Path) -> dict[str, str]:
    code = "import importlib.metadata as m, sys\nfor name in sys.argv[1:]: print(name, m.version(name))"
    done = subprocess.run([str(python), "-c", code, *DEPENDENCIES], capture_output=True, text=True, check=True)
    versions = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    return {"python": sys.version.split()[0], **versions}


def render(f: StartupFigures) -> str:
    rows = []
    for name, timing in f.timings.items():
        count = f"{f.instructions[name] / 1e6:,.0f} M ({f.ratio(name):.1f}x)" if name in f.instructions else "-"
        wall = f"{timing.median * 1000:.0f} ms ({min(timing.wall) * 1000:.0f}-{max(timing.wall) * 1000:.0f})"
        rows.append(f"| `{name}` | {count} | {wall} | {timing.median_cpu * 1000:.0f} ms |")
    helps = [
        f"| `{name}` | {f.instructions[name] / 1e6:,.0f} M ({f.ratio(name):.1f}x) |"
        for name in f.instructions
        if name.endswith(" --help") and name != "aoe-runner --help"
    ]
    load = ", ".join(f"{a:.2f}" for a in f.load_before) + " before; " + ", ".join(f"{a:.2f}" for a in f.load_after) + " after"
    return "\n".join(
        [
            "## Start-up",
            "",
            "A regular install (`pip install .` of the checkout into a scratch venv), measured by `python bench/run.py",
            "--only startup`. Instructions are counted by `valgrind --tool=callgrind` and do not move with the load; the",
            "multiple is of the same venv's `python -c pass`. Wall and CPU: median (min-max) of "
            f"{len(next(iter(f.timings.values())).wall)} interleaved rounds (3 for the hanging npu-smi, whose wall time is "
            "the point); `report sample_results/` with the cache its first run left, as a user's repeated report finds "
            "it. Load average (1, 5, 15 min): " + load + ".",
            "",
            "| command | instructions | wall | CPU |",
            "|---|---|---|---|",
            *rows,
            "",
            "Every other command's `--help`:",
            "",
            "| command | instructions |",
            "|---|---|",
            *helps,
            "",
            f"Peak RSS of `aoe-runner report sample_results/`: {f.report_rss / 2**20:.0f} MiB.",
            "",
            f"Installed ({f.install.variant}, in {f.install.seconds:.0f} s): "
            + ", ".join(f"{name} {version}" for name, version in f.versions.items())
            + ".",
        ]
    )


def target_rows(f: StartupFigures) -> list[tuple[str, str, float, float, bool]]:
    if not f.instructions:
        return []
    rows = [
        ("`aoe-runner --help`, instructions / `python -c pass`", "<= 8", f.ratio("aoe-runner --help"), 8.0, False),
        (
            "`aoe-runner report sample_results/`, instructions / `python -c pass`",
            "<= 10",
            f.ratio("aoe-runner report sample_results/"),
            10.0,
            False,
        ),
        ("`aoe-runner preflight`, instructions / `python -c pass`", "<= 9", f.ratio("aoe-runner preflight"), 9.0, False),
    ]
    slowest = max((name for name in f.instructions if name.endswith(" --help") and name != "aoe-runner --help"), key=f.ratio)
    rows.append(
        (f"the heaviest other `--help` (`{slowest}`), instructions / `python -c pass`", "<= 8", f.ratio(slowest), 8.0, False)
    )
    hung = f.timings["aoe-runner preflight, npu-smi hanging"].median * 1000
    rows.append(("`aoe-runner preflight`, npu-smi hanging (ms)", "<= 3000", hung, 3000.0, False))
    return rows
