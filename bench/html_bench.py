"""`report --format html` against `--format json` on the report corpora: time and output size.

Run alone with `python bench/html_bench.py [ROUNDS]` (prints its section), or from `python bench/run.py --only html`.
Both formats run interleaved, round by round, each from an empty aoe-runner home (a first report: every file parsed,
the cache written), plain Python as `pip install .` installs it; wall time beside the process tree's CPU time, the
median of the rounds with min-max, the median of the per-round ratios, and the load average before and after.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from report_bench import Corpus, Timing, interleaved, prepare_corpora  # noqa: E402

MIN_ROUNDS = 5  # two short commands: more rounds than the default 3, to see through a shared machine's noise
TIME_TARGET = 1.5  # html time / json time
SIZE_TARGET_MB = 10.0
LEFT_OUT = re.compile(r"[\d,]+ operators: the table shows the first [\d,]+; [\d,]+ left out \(--top \d+\)")


@dataclass
class CorpusFigures:
    corpus: Corpus
    json: Timing  # to stdout, discarded
    json_file: Timing  # -o FILE, written as the page is (atomically, fsynced)
    html: Timing
    json_bytes: int
    html_bytes: int
    note: str  # what the page says it left out of its table

    @property
    def ratio(self) -> float:
        """The median of the per-round ratios html / json (interleaved rounds see the same load)."""
        return _ratio(self.html, self.json)

    @property
    def ratio_to_file(self) -> float:
        return _ratio(self.html, self.json_file)


def _ratio(numerator: Timing, denominator: Timing) -> float:
    return statistics.median(n / d for n, d in zip(numerator.wall, denominator.wall, strict=True))


@dataclass
class HtmlFigures:
    corpora: list[CorpusFigures]
    rounds: int
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]


def measure(rounds: int, quick: bool = False) -> HtmlFigures:
    load_before = os.getloadavg()
    plain = [sys.executable, "-m", "aoe_runner"]
    figures = []
    with tempfile.TemporaryDirectory(prefix="aoe-bench-html-") as scratch:
        page, document = Path(scratch) / "page.html", Path(scratch) / "summary.json"
        for corpus in prepare_corpora(quick):
            print(f"html against json on {corpus.name}", flush=True)
            target = str(corpus.path)
            timings = interleaved(
                {
                    "json": ([*plain, "report", target, "--format", "json"], None),
                    "json -o": ([*plain, "report", target, "--format", "json", "-o", str(document)], None),
                    "html -o": ([*plain, "report", target, "--format", "html", "-o", str(page)], None),
                },
                rounds,
            )
            found = LEFT_OUT.search(page.read_text(encoding="utf-8"))
            sizes = (document.stat().st_size, page.stat().st_size)
            figures.append(
                CorpusFigures(
                    corpus, timings["json"], timings["json -o"], timings["html -o"], *sizes, found.group() if found else ""
                )
            )
    return HtmlFigures(figures, rounds, load_before, os.getloadavg())


def render(f: HtmlFigures) -> str:
    lines = [
        "## HTML pages",
        "",
        "`aoe-runner report CORPUS --format html -o page.html` against `--format json`, to stdout (discarded) and with",
        "`-o FILE` (written atomically and fsynced, as the page is).",
        f"Load average before {_load(f.load_before)}, after {_load(f.load_after)} ({os.cpu_count()} CPUs, shared with other",
        f"jobs). Each cell: median wall time of {f.rounds} interleaved rounds (min-max) | median CPU time of the process",
        "tree. Ratios: the median of the per-round ratios of wall times. The page inlines plotly.min.js (4.9 MB of it).",
        "",
        "| corpus | json: wall (min-max) | CPU | json -o: wall (min-max) | CPU | html -o: wall (min-max) | CPU "
        "| html / json | html / json -o | json size | html size | html table |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in f.corpora:
        lines.append(
            f"| {c.corpus.name}, {c.corpus.mb:.0f} MB, {c.corpus.entries:,} entries | {c.json.cell()} | {c.json_file.cell()} | "
            f"{c.html.cell()} | {c.ratio:.2f} | {c.ratio_to_file:.2f} | {c.json_bytes / 1e6:.1f} MB | "
            f"{c.html_bytes / 1e6:.1f} MB | {c.note or 'every entry'} |"
        )
    return "\n".join(lines) + "\n"


def target_rows(f: HtmlFigures) -> list[tuple[str, str, float, float, bool]]:
    bank = f.corpora[0]
    return [
        (f"html time / json time, {bank.corpus.name}", f"<= {TIME_TARGET}x", bank.ratio, TIME_TARGET, False),
        (f"html page size (MB), {bank.corpus.name}", f"<= {SIZE_TARGET_MB:g} MB", bank.html_bytes / 1e6, SIZE_TARGET_MB, False),
    ]


def _load(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.2f}" for value in load)


if __name__ == "__main__":
    print(render(measure(int(sys.argv[1]) if len(sys.argv) > 1 else MIN_ROUNDS)))
