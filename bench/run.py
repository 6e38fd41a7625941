"""One command for every benchmark: `python bench/run.py` (add --quick for smaller report corpora).

The report benchmarks (bench/report_bench.py: throughput against a bare json.loads loop and jq, with the
machine's CPUs and pinned to one, plain and mypyc-compiled, the cache's second run, growth with files,
start-up), then the tune, run-history and verify benchmarks (bench/tune_bench.py, bench/history_bench.py,
bench/verify_bench.py). Results go to stdout and, in full, to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import history_bench  # noqa: E402
import report_bench  # noqa: E402
import tune_bench  # noqa: E402
import verify_bench  # noqa: E402

VERIFY_ROUNDS = 2  # each round is two minutes of real runs


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller report corpora (40 and 20 files)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    print("report benchmarks", flush=True)
    report_figures = report_bench.measure(args.rounds, args.quick)
    print("tune and run-history benchmarks", flush=True)
    tune_figures = tune_bench.measure(args.rounds, timed)
    print("history storage benchmarks", flush=True)
    history_figures = history_bench.measure(args.rounds)
    print("verify benchmarks", flush=True)
    verify_figures = verify_bench.measure(VERIFY_ROUNDS)
    text = header(args.rounds)
    text += "\n" + report_bench.render(report_figures)
    text += "\n" + tune_bench.render(tune_figures, args.rounds)
    text += "\n" + history_bench.render(history_figures)
    text += "\n" + verify_bench.render(verify_figures)
    rows = report_bench.target_rows(report_figures) + tune_bench.target_rows(tune_figures)
    text += targets(rows + verify_bench.target_rows(verify_figures))
    print(text)
    if not args.no_write:
        (ROOT / "docs" / "benchmarks.md").write_text(text, encoding="utf-8")


def header(rounds: int) -> str:
    cpu = platform.processor() or platform.machine()
    return "\n".join(
        [
            "# Benchmarks",
            "",
            f"Measured by `python bench/run.py` on this machine: {psutil.cpu_count()} CPUs ({cpu}),",
            f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}; {rounds} interleaved rounds",
            "unless a section says otherwise. The CPUs are shared with other jobs: each section gives the load average",
            "it ran under, and wall time beside CPU time.",
            "",
        ]
    )


def targets(checks: list[tuple[str, str, float, float, bool]]) -> str:
    """The issues' targets beside what this run measured."""
    rows = []
    for name, target, value, bound, at_least in checks:
        met = value >= bound if at_least else value <= bound
        rows.append(f"| {name} | {target} | {value:.2f} | {'met' if met else '**not met**'} |")
    return "\n".join(["", "## Targets", "", "| what | target | measured | |", "|---|---|---|---|", *rows, ""])


if __name__ == "__main__":
    main()
