"""One command for every benchmark: `python bench/run.py` (add --quick for a smaller report corpus).

In the same run, interleaved round by round, it times `aoe-runner report CORPUS --format json` against
two baselines — a bare loop that reads and `json.loads` every file, and `jq` extracting the same
operator records — and reports ratios (baseline time / aoe-runner time: above 1 means aoe-runner is
faster). It also records peak RSS summed over aoe-runner's whole process tree (workers included),
and start-up times against `python -c pass`; then the tune, run-history and verify benchmarks
(bench/tune_bench.py, bench/history_bench.py, bench/verify_bench.py). Results go to stdout and to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import history_bench  # noqa: E402
import tune_bench  # noqa: E402
import verify_bench  # noqa: E402
from generate_corpus import write_corpus  # noqa: E402

BARE_LOOP = (
    "import json, sys, pathlib\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).glob('aoe_result_*.json')):\n"
    "    json.loads(p.read_bytes())\n"
)
VERIFY_ROUNDS = 2  # each round is two minutes of real runs
JQ_FILTER = ".[] | .[] | .OPAT? // empty | .repo_modified_operators[] | {op_name, op_type, perf: .tune_performance}"


def aoe_runner() -> list[str]:
    return [sys.executable, "-m", "aoe_runner"]


def timed(
    command: list[str], sample_rss: bool = False, ok_codes: tuple[int, ...] = (0,), env: dict[str, str] | None = None
) -> tuple[float, int]:
    """Wall seconds and, when asked, the peak of the summed RSS of the process and its children."""
    start = time.perf_counter()
    process = psutil.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    peak = 0
    while process.poll() is None:
        if sample_rss:
            peak = max(peak, _tree_rss(process))
        time.sleep(0.02)
    elapsed = time.perf_counter() - start
    if process.returncode not in ok_codes:
        raise SystemExit(f"benchmark command failed ({process.returncode}): {' '.join(command)}")
    return elapsed, peak


def _tree_rss(process: psutil.Process) -> int:
    try:
        members = [process, *process.children(recursive=True)]
        return sum(member.memory_info().rss for member in members)
    except psutil.Error:
        return 0


def median_time(command: list[str], rounds: int, **options: Any) -> float:
    return statistics.median(timed(command, **options)[0] for _ in range(rounds))


def hanging_npu_smi_env(directory: Path) -> dict[str, str]:
    """PATH with an `npu-smi` that never answers first: preflight must give up on it, not wait."""
    script = directory / "npu-smi"
    script.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(600)\n")
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{directory}{os.pathsep}{os.environ.get('PATH', '')}"}


def corpus_for(args: argparse.Namespace) -> tuple[Path, int]:
    files = 40 if args.quick else 200
    corpus = ROOT / "bench" / "corpus" / f"{files}-files"
    if not corpus.exists():
        print(f"generating {corpus} ...", flush=True)
        write_corpus(corpus, files=files, reports=3, operators=2000, pool=6000, seed=20261121)
    size = sum(p.stat().st_size for p in corpus.glob("*.json"))
    return corpus, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="40 files instead of 200")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    corpus, size = corpus_for(args)
    files = len(list(corpus.glob("*.json")))
    report = [*aoe_runner(), "report", str(corpus), "--format", "json"]
    loop = [sys.executable, "-c", BARE_LOOP, str(corpus)]
    jq = shutil.which("jq")
    jq_command = [jq, "-c", JQ_FILTER, *sorted(str(p) for p in corpus.glob("*.json"))] if jq else None

    times: dict[str, list[float]] = {"aoe-runner": [], "json.loads loop": [], "jq": []}
    peak_rss = 0
    for round_number in range(args.rounds):
        print(f"round {round_number + 1}/{args.rounds}", flush=True)
        elapsed, rss = timed(report, sample_rss=True)
        times["aoe-runner"].append(elapsed)
        peak_rss = max(peak_rss, rss)
        times["json.loads loop"].append(timed(loop)[0])
        if jq_command:
            times["jq"].append(timed(jq_command)[0])
    medians = {name: statistics.median(values) for name, values in times.items() if values}

    small_rss = timed([*aoe_runner(), "report", str(ROOT / "sample_results"), "--format", "json"], sample_rss=True)[1]
    startup = {
        "python -c pass": median_time([sys.executable, "-c", "pass"], 7),
        "aoe-runner --help": median_time([*aoe_runner(), "--help"], 7),
        "aoe-runner report sample_results/": median_time([*aoe_runner(), "report", str(ROOT / "sample_results")], 7),
        # preflight exits 1 on a machine without CANN or an NPU: that is its answer, not a failure
        "aoe-runner preflight": median_time([*aoe_runner(), "preflight"], 7, ok_codes=(0, 1)),
    }
    with tempfile.TemporaryDirectory() as scratch:
        startup["aoe-runner preflight, npu-smi hanging"] = median_time(
            [*aoe_runner(), "preflight"], 3, ok_codes=(0, 1), env=hanging_npu_smi_env(Path(scratch))
        )
    print("tune and run-history benchmarks", flush=True)
    tune_figures = tune_bench.measure(args.rounds, timed)
    print("history storage benchmarks", flush=True)
    history_figures = history_bench.measure(args.rounds)
    print("verify benchmarks", flush=True)
    verify_figures = verify_bench.measure(VERIFY_ROUNDS)
    text = render(corpus, files, size, medians, peak_rss, small_rss, startup, args.rounds)
    text += "\n" + tune_bench.render(tune_figures, args.rounds)
    text += "\n" + history_bench.render(history_figures)
    text += "\n" + verify_bench.render(verify_figures)
    text += targets(medians, peak_rss, startup, tune_bench.target_rows(tune_figures) + verify_bench.target_rows(verify_figures))
    print(text)
    if not args.no_write:
        (ROOT / "docs" / "benchmarks.md").write_text(text, encoding="utf-8")


def targets(
    medians: dict[str, float], peak_rss: int, startup: dict[str, float], more: list[tuple[str, str, float, float, bool]]
) -> str:
    """The issue's targets beside what this run measured."""
    ours = medians["aoe-runner"]
    checks = [
        ("throughput vs the bare json.loads loop", ">= 1.00", medians["json.loads loop"] / ours, 1.0, True),
        ("throughput vs jq", ">= 3.00", medians["jq"] / ours if "jq" in medians else float("nan"), 3.0, True),
        ("peak RSS of the process tree", "<= 300 MiB", peak_rss / 2**20, 300, False),
        ("`aoe-runner --help`", "<= 300 ms", startup["aoe-runner --help"] * 1000, 300, False),
        ("`aoe-runner report sample_results/`", "<= 300 ms", startup["aoe-runner report sample_results/"] * 1000, 300, False),
        ("`aoe-runner preflight`", "<= 1000 ms", startup["aoe-runner preflight"] * 1000, 1000, False),
        (
            "`aoe-runner preflight`, npu-smi hanging",
            "<= 3000 ms",
            startup["aoe-runner preflight, npu-smi hanging"] * 1000,
            3000,
            False,
        ),
        *more,
    ]
    rows = []
    for name, target, value, bound, at_least in checks:
        met = value >= bound if at_least else value <= bound
        rows.append(f"| {name} | {target} | {value:.2f} | {'met' if met else '**not met**'} |")
    return "\n".join(["", "## Targets", "", "| what | target | measured | |", "|---|---|---|---|", *rows, ""])


def render(corpus, files, size, medians, peak_rss, small_rss, startup, rounds) -> str:  # type: ignore[no-untyped-def]
    ours = medians["aoe-runner"]
    rows = [f"| {name} | {seconds:.2f} s | {seconds / ours:.2f} |" for name, seconds in medians.items()]
    mb = size / 1e6
    startup_rows = [f"| `{name}` | {seconds * 1000:.0f} ms |" for name, seconds in startup.items()]
    cpu = platform.processor() or platform.machine()
    return "\n".join(
        [
            "# Benchmarks",
            "",
            "Measured by `python bench/run.py` (the 200-file corpus; `--quick` uses 40 files). Each figure is the",
            f"median of {rounds} interleaved rounds on this machine: {psutil.cpu_count()} CPUs ({cpu}),",
            f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}.",
            "",
            "## `aoe-runner report CORPUS --format json`",
            "",
            f"Corpus: {files} files x 3 reports x 2,000 operators, {mb:.0f} MB, indented as AOE writes it",
            "(`bench/generate_corpus.py`, seeded). Ratio = that command's time / aoe-runner's time: above 1.00",
            "means aoe-runner is faster.",
            "",
            "| command | median wall time | ratio |",
            "|---|---|---|",
            *rows,
            "",
            f"aoe-runner's throughput: {mb / ours:.0f} MB/s. The bare loop reads and `json.loads` every file and",
            "does nothing else, in one process; aoe-runner splits a corpus this size over one worker per CPU",
            f"({os.cpu_count()} here), so the ratio is what a user sees, not a per-core comparison. jq runs",
            "`" + JQ_FILTER + "` over all files.",
            "",
            f"Peak RSS, summed over aoe-runner's process tree (parent and workers): {peak_rss / 2**20:.0f} MiB on this",
            f"corpus, {small_rss / 2**20:.0f} MiB on `sample_results/`. Files are streamed one at a time per worker;",
            "what grows with the corpus is the set of distinct bank entries (here 6,000 operator names).",
            "",
            "## Start-up",
            "",
            "| command | median wall time (7 runs; 3 for the hanging npu-smi) |",
            "|---|---|",
            *startup_rows,
            "",
        ]
    )


if __name__ == "__main__":
    main()
