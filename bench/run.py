"""One command for every benchmark: `python bench/run.py` (add --quick for smaller report corpora).

Start-up (bench/startup_bench.py) is measured on a regular install of the checkout in a scratch venv, in CPU
instructions (valgrind) beside wall and CPU time.

The report benchmarks (bench/report_bench.py: throughput against a bare json.loads loop and jq, with the
machine's CPUs and pinned to one, plain and mypyc-compiled, the cache's second run, growth with files,
start-up), where a second report's time goes (bench/second_report_bench.py), then the tune, run-history
and verify benchmarks (bench/tune_bench.py, bench/history_bench.py, bench/verify_bench.py), bank pull against a
plain copy (bench/release_bench.py), --format html
against json (bench/html_bench.py) and the shared store on PostgreSQL (bench/store_bench.py).
`--only SECTION,...` re-measures some sections and keeps the others' figures. Results go to stdout and to
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import campaign_bench  # noqa: E402
import history_bench  # noqa: E402
import html_bench  # noqa: E402
import release_bench  # noqa: E402
import report_bench  # noqa: E402
import second_report_bench  # noqa: E402
import startup_bench  # noqa: E402
import tune_bench  # noqa: E402
import verify_bench  # noqa: E402

VERIFY_ROUNDS = 2  # each round is two minutes of real runs


@dataclass(frozen=True)
class Section:
    """One benchmark: how to measure it, and its text and target rows for docs/benchmarks.md."""

    measure: Callable[[argparse.Namespace], object]
    render: Callable[[object, argparse.Namespace], str]
    target_rows: Callable[[object], list[tuple[str, str, float, float, bool]]]


SECTIONS: dict[str, Section] = {
    "report": Section(
        lambda args: report_bench.measure(args.rounds, args.quick),
        lambda f, args: report_bench.render(f),  # type: ignore[arg-type]
        report_bench.target_rows,  # type: ignore[arg-type]
    ),
    "startup": Section(
        lambda args: startup_bench.measure(),
        lambda f, args: startup_bench.render(f),  # type: ignore[arg-type]
        startup_bench.target_rows,  # type: ignore[arg-type]
    ),
    "second": Section(
        lambda args: second_report_bench.measure(max(args.rounds, 5)),
        lambda f, args: second_report_bench.render(f),  # type: ignore[arg-type]
        second_report_bench.target_rows,  # type: ignore[arg-type]
    ),
    "tune": Section(
        lambda args: tune_bench.measure(args.rounds),
        lambda f, args: tune_bench.render(f, args.rounds),  # type: ignore[arg-type]
        tune_bench.target_rows,  # type: ignore[arg-type]
    ),
    "history": Section(
        lambda args: history_bench.measure(args.rounds),
        lambda f, args: history_bench.render(f),  # type: ignore[arg-type]
        lambda f: [],
    ),
    "html": Section(
        lambda args: html_bench.measure(max(args.rounds, html_bench.MIN_ROUNDS), args.quick),
        lambda f, args: html_bench.render(f),  # type: ignore[arg-type]
        html_bench.target_rows,  # type: ignore[arg-type]
    ),
    "verify": Section(
        lambda args: verify_bench.measure(VERIFY_ROUNDS),
        lambda f, args: verify_bench.render(f),  # type: ignore[arg-type]
        verify_bench.target_rows,  # type: ignore[arg-type]
    ),
    "campaign": Section(
        lambda args: campaign_bench.measure(max(args.rounds, 2)),
        lambda f, args: campaign_bench.render(f),  # type: ignore[arg-type]
        lambda f: [],
    ),
    "release": Section(
        lambda args: release_bench.measure(max(args.rounds, 3)),
        lambda f, args: release_bench.render(f),  # type: ignore[arg-type]
        lambda f: [],
    ),
    "store": Section(  # imported when chosen: it needs psycopg and Debian's PostgreSQL server binaries
        lambda args: _store_bench().measure(),
        lambda f, args: _store_bench().render(f),
        lambda f: [],  # its text holds its own targets
    ),
}


def _store_bench():  # type: ignore[no-untyped-def]
    import store_bench

    return store_bench


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller report corpora (40 and 20 files)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to measure (of {', '.join(SECTIONS)}); the others keep their figures",
    )
    args = parser.parse_args()
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        parser.error(f"--only: unknown section {', '.join(unknown)}")
    blocks = {}
    for name in chosen:
        print(f"{name} benchmarks", flush=True)
        section = SECTIONS[name]
        figures = section.measure(args)
        blocks[name] = section.render(figures, args) + targets(section.target_rows(figures))
    print("\n\n".join(blocks.values()))
    if not args.no_write:
        path = ROOT / "docs" / "benchmarks.md"
        previous = path.read_text(encoding="utf-8") if path.exists() else ""
        path.write_text(splice(previous, header(args.rounds), blocks), encoding="utf-8")


def splice(document: str, header_text: str, blocks: dict[str, str]) -> str:
    """The document with a new header and each named block replaced (or added at the end); other text stays."""
    first = document.find(_ANY_BEGIN)
    rest = document[first:] if first >= 0 else ""  # the header before the first block is made anew
    for name, block in blocks.items():
        begin, end = _BEGIN.format(name=name), _END.format(name=name)
        marked = f"{begin}\n{block.strip()}\n{end}"
        if begin in rest and end in rest:
            before, _, after = rest.partition(begin)
            rest = before + marked + after.partition(end)[2]
        else:
            rest = rest.rstrip("\n") + ("\n\n" if rest else "") + marked
    return header_text + "\n" + rest.rstrip("\n") + "\n"


_ANY_BEGIN = "<!-- bench:"
_BEGIN = _ANY_BEGIN + "{name} -->"
_END = "<!-- /bench:{name} -->"


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
    """The issues' targets beside what this run measured (nothing when a section has none)."""
    if not checks:
        return ""
    rows = []
    for name, target, value, bound, at_least in checks:
        met = value >= bound if at_least else value <= bound
        rows.append(f"| {name} | {target} | {value:.2f} | {'met' if met else '**not met**'} |")
    return "\n".join(["", "", "Targets:", "", "| what | target | measured | |", "|---|---|---|---|", *rows, ""])


if __name__ == "__main__":
    main()
