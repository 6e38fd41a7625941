"""The `aoe-runner report` benchmarks: throughput against a bare json.loads loop and jq, with the machine's CPUs
and pinned to one, on two corpus shapes; the cache's second run; growth with files; start-up.

Every comparison runs interleaved, round by round, in one run; each figure is the median of the rounds with
their spread (min-max), wall time beside CPU time (the process tree's user + system, from getrusage of waited-for
children), and the load average before and after says how idle the machine was. aoe-runner is measured twice
where speed is concerned, from two regular installs of the checkout (bench/installs.py): the default, compiled by
mypyc where this machine can, and the plain-Python fallback (`AOE_RUNNER_MYPYC=0`).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from generate_corpus import write_corpus  # noqa: E402
from installs import regular_install  # noqa: E402
from report_phases import PhaseFigures  # noqa: E402
from report_phases import measure as measure_phases  # noqa: E402
from report_phases import render as render_phases  # noqa: E402

BARE_LOOP = (
    "import json, sys, pathlib\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).glob('aoe_result_*.json')):\n"
    "    json.loads(p.read_bytes())\n"
)
JQ_FILTER = ".[] | .[] | .OPAT? // empty | .repo_modified_operators[] | {op_name, op_type, perf: .tune_performance}"
# runs aoe-runner from a scratch tree that holds the compiled modules (an editable install's finder would win)
COMPILED_LAUNCHER = (
    "import sys\n"
    "sys.meta_path = [f for f in sys.meta_path if 'editable' not in repr(f)]\n"
    "sys.path.insert(0, sys.argv.pop(1))\n"
    "from aoe_runner.__main__ import main\n"
    "raise SystemExit(main())\n"
)
GROWTH_FILES = (10, 40, 80, 160)
ONE_CPU = ["taskset", "-c", "0"]


@dataclass
class Timing:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    peak_rss: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def median_cpu(self) -> float:
        return statistics.median(self.cpu)

    def cell(self) -> str:
        return f"{self.median:.2f} s ({min(self.wall):.2f}-{max(self.wall):.2f}) | {self.median_cpu:.2f} s"


@dataclass
class Corpus:
    name: str
    path: Path
    files: list[Path]
    size: int
    records: int
    entries: int

    @property
    def mb(self) -> float:
        return self.size / 1e6


@dataclass
class CacheRuns:
    """Three reports in one aoe-runner home: over all files but the last, over all of them, and over all again; and,
    with the cache off, a report of the last file alone: the least any second report can cost (start-up, reading
    the new file, summarising and writing what it holds)."""

    first: Timing = field(default_factory=Timing)
    second: Timing = field(default_factory=Timing)
    again: Timing = field(default_factory=Timing)
    alone: Timing = field(default_factory=Timing)

    @property
    def ratio(self) -> float:
        return self.second.median / self.first.median

    @property
    def floor(self) -> float:
        return self.alone.median / self.first.median


CACHE_CPUS = {"machine's CPUs": [], "1 CPU": ONE_CPU}


@dataclass
class ReportFigures:
    corpora: list[Corpus]
    throughput: dict[str, dict[str, Timing]]  # corpus name -> command label -> timing
    cache: dict[tuple[str, str], CacheRuns]  # (corpus name, CPUs) -> its three reports
    growth: list[tuple[int, float, Timing, Timing]]  # files, MB, plain, compiled (compiled may be empty)
    small_rss: int
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    compiled: bool
    rounds: int
    installs: dict[str, float]  # variant -> seconds `pip install .` took
    phases: list[PhaseFigures]  # where a 1-CPU report's time goes, per corpus and variant


def run(
    command: list[str], env: dict[str, str] | None = None, ok_codes: tuple[int, ...] = (0,), rss: bool = False
) -> tuple[float, float, int]:  # noqa: E501
    """Wall seconds, CPU seconds of the whole process tree, and (when asked) its peak summed RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = psutil.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    peak = 0
    if rss:  # sampled every 10 ms, which the wall time can overshoot by as much
        while process.poll() is None:
            peak = max(peak, _tree_rss(process))
            time.sleep(0.01)
    else:
        process.wait()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode not in ok_codes:
        raise SystemExit(f"benchmark command failed ({process.returncode}): {' '.join(command)}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, peak


def _tree_rss(process: psutil.Process) -> int:
    try:
        return sum(member.memory_info().rss for member in [process, *process.children(recursive=True)])
    except psutil.Error:
        return 0


def interleaved(
    commands: dict[str, tuple[list[str], dict[str, str] | None]], rounds: int, rss: bool = False, ok_codes: tuple[int, ...] = (0,)
) -> dict[str, Timing]:  # noqa: E501
    timings = {label: Timing() for label in commands}
    for number in range(rounds):
        print(f"  round {number + 1}/{rounds}", flush=True)
        for label, (command, env) in commands.items():
            with _home(env) as home_env:
                wall, cpu, peak = run(command, env=home_env, ok_codes=ok_codes, rss=rss)
            timings[label].wall.append(wall)
            timings[label].cpu.append(cpu)
            timings[label].peak_rss = max(timings[label].peak_rss, peak)
    return timings


@contextmanager
def _home(env: dict[str, str] | None) -> Iterator[dict[str, str]]:
    """The environment, with an empty aoe-runner home unless it names one: a first report, its cache written."""
    base = dict(env if env is not None else os.environ)
    if "AOE_RUNNER_HOME" in base:
        yield base
        return
    with tempfile.TemporaryDirectory(prefix="aoe-bench-home-") as home:
        yield {**base, "AOE_RUNNER_HOME": home}


def prepare_corpora(quick: bool) -> list[Corpus]:
    bank_files = 40 if quick else 200
    bank = ROOT / "bench" / "corpus" / f"{bank_files}-files"
    if not bank.exists():
        print(f"generating {bank} ...", flush=True)
        write_corpus(bank, files=bank_files, reports=3, operators=2000, pool=6000, seed=20261121)
    random_files = 20 if quick else 80
    shaped = ROOT / "bench" / "corpus" / f"random-{random_files}"
    if not shaped.exists():
        print(f"generating {shaped} ...", flush=True)
        write_corpus(shaped, files=random_files, reports=3, operators=2000, pool=30000, seed=20261122, shape="random", indent=2)  # noqa: E501
    return [
        _corpus(f"bank ({bank_files} files)", bank, records=bank_files * 6000, entries=6000),
        _corpus(f"random names ({random_files} files)", shaped, records=random_files * 6000, entries=30000),
    ]


def _corpus(name: str, path: Path, records: int, entries: int) -> Corpus:
    files = sorted(path.glob("aoe_result_*.json"))
    return Corpus(name, path, files, sum(p.stat().st_size for p in files), records, entries)


def commands_for(
    corpus: Corpus, plain: list[str], compiled: list[str] | None
) -> dict[str, tuple[list[str], dict[str, str] | None]]:  # noqa: E501
    target = str(corpus.path)
    commands: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "json.loads loop": ([sys.executable, "-c", BARE_LOOP, target], None),
        "json.loads loop, 1 CPU": ([*ONE_CPU, sys.executable, "-c", BARE_LOOP, target], None),
        "aoe-runner plain": ([*plain, "report", target, "--format", "json"], None),
        "aoe-runner plain, 1 CPU": ([*ONE_CPU, *plain, "report", target, "--format", "json"], None),
    }
    if compiled:
        no_cache = {**os.environ, "AOE_RUNNER_CACHE": "off"}
        commands["aoe-runner compiled"] = ([*compiled, "report", target, "--format", "json"], None)
        commands["aoe-runner compiled, 1 CPU"] = ([*ONE_CPU, *compiled, "report", target, "--format", "json"], None)
        commands["aoe-runner compiled, cache off"] = ([*compiled, "report", target, "--format", "json"], no_cache)
        commands["aoe-runner compiled, cache off, 1 CPU"] = (
            [*ONE_CPU, *compiled, "report", target, "--format", "json"],
            no_cache,
        )
    jq = shutil.which("jq")
    if jq:
        commands["jq"] = ([jq, "-c", JQ_FILTER, *map(str, corpus.files)], None)
    return commands


def measure_cache(corpus: Corpus, command: list[str], rounds: int) -> dict[str, CacheRuns]:
    """Per CPU setting (interleaved, round by round): a first report over all files but the last, a second over
    all of them, and a third over all of them again (nothing new: what the summary alone costs), in one home; then
    the last file alone with the cache off."""
    runs = {cpus: CacheRuns() for cpus in CACHE_CPUS}
    for _ in range(rounds):
        for cpus, pin in CACHE_CPUS.items():
            r = runs[cpus]
            with _home(None) as env:
                for timing, files in ((r.first, corpus.files[:-1]), (r.second, corpus.files), (r.again, corpus.files)):
                    _time(timing, [*pin, *command, "report", *map(str, files), "--format", "json"], env)
            with _home({**os.environ, "AOE_RUNNER_CACHE": "off"}) as env:
                _time(r.alone, [*pin, *command, "report", str(corpus.files[-1]), "--format", "json"], env)
    return runs


def _time(timing: Timing, command: list[str], env: dict[str, str]) -> None:
    wall, cpu, _ = run(command, env=env)
    timing.wall.append(wall)
    timing.cpu.append(cpu)


def measure_growth(
    corpus: Corpus, plain: list[str], compiled: list[str] | None, rounds: int
) -> list[tuple[int, float, Timing, Timing]]:  # noqa: E501
    rows = []
    for count in GROWTH_FILES:
        files = corpus.files[:count] if count <= len(corpus.files) else None
        if files is None:
            continue
        mb = sum(p.stat().st_size for p in files) / 1e6
        commands = {"plain": ([*plain, "report", *map(str, files), "--format", "json"], None)}
        if compiled:
            commands["compiled"] = ([*compiled, "report", *map(str, files), "--format", "json"], None)
        timings = interleaved(commands, rounds, rss=True)
        rows.append((count, mb, timings["plain"], timings.get("compiled", Timing())))
    return rows


def measure_small_rss(plain: list[str], scratch: Path) -> int:
    """Peak RSS of a report of sample_results/ (its start-up is bench/startup_bench.py's, on a regular install)."""
    home = {**os.environ, "AOE_RUNNER_HOME": str(scratch / "startup-home")}
    return run([*plain, "report", str(ROOT / "sample_results"), "--format", "json"], env=home, rss=True)[2]


def measure(rounds: int, quick: bool = False) -> ReportFigures:
    load_before = os.getloadavg()
    corpora = prepare_corpora(quick)
    with tempfile.TemporaryDirectory(prefix="aoe-bench-") as scratch_name:
        scratch = Path(scratch_name)
        plain_install = regular_install(scratch / "plain", plain=True)
        default_install = regular_install(scratch / "default")
        plain = plain_install.runner
        compiled = default_install.runner if default_install.compiled else None
        if compiled:
            _same_output(corpora[1], plain, compiled)
        throughput = {}
        for corpus in corpora:
            print(f"report throughput on {corpus.name}", flush=True)
            throughput[corpus.name] = interleaved(commands_for(corpus, plain, compiled), rounds, rss=True)
        print("cache: a second report with one new file", flush=True)
        cache = {
            (corpus.name, cpus): runs
            for corpus in corpora
            for cpus, runs in measure_cache(corpus, compiled or plain, rounds).items()
        }
        print("growth with files", flush=True)
        growth = measure_growth(corpora[0], plain, compiled, 2)
        small_rss = measure_small_rss(plain, scratch)
        print("report's phases, 1 CPU", flush=True)
        variants = [("compiled", default_install)] if compiled else []
        phases = [
            measure_phases(install.python, variant, corpus.path, rounds)
            for corpus in corpora
            for variant, install in [*variants, ("plain", plain_install)]
        ]
    installs = {"plain": plain_install.seconds, "default": default_install.seconds}
    return ReportFigures(
        corpora,
        throughput,
        cache,
        growth,
        small_rss,
        load_before,
        os.getloadavg(),
        compiled is not None,
        rounds,
        installs,
        phases,
    )


def _same_output(corpus: Corpus, plain: list[str], compiled: list[str]) -> None:
    """The compiled variant must write exactly what the plain one writes."""
    outputs = []
    for command in (plain, compiled):
        with _home(None) as env:
            outputs.append(
                subprocess.run([*command, "report", str(corpus.path), "--format", "json"], capture_output=True, env=env).stdout
            )  # noqa: E501
    if outputs[0] != outputs[1]:
        raise SystemExit("the compiled variant's JSON differs from the plain one's")


def render(f: ReportFigures) -> str:
    lines = [
        "## `aoe-runner report CORPUS --format json`",
        "",
        f"Load average before {_load(f.load_before)}, after {_load(f.load_after)} ({os.cpu_count()} CPUs, shared with",
        "other jobs: a load near 2 means no CPU was idle). Each cell: median wall time of"
        f" {f.rounds} interleaved rounds (min-max) | median CPU time of the process tree. Ratio = the bare loop's",
        "median wall time / this command's with the same CPUs: above 1.00 aoe-runner is faster. Each aoe-runner run",
        "starts with an empty aoe-runner home, so it parses every file and writes its cache (a first report).",
        "",
    ]
    for corpus in f.corpora:
        timings = f.throughput[corpus.name]
        lines += [
            f"### {corpus.name}: {len(corpus.files)} files, {corpus.mb:.0f} MB, {corpus.records:,} operator records, "
            f"{corpus.entries:,} bank entries",
            "",
            "| command | wall (min-max) | CPU | ratio to the loop | MB/s |",
            "|---|---|---|---|---|",
        ]
        for label, timing in timings.items():
            loop = timings["json.loads loop, 1 CPU" if "1 CPU" in label else "json.loads loop"]
            lines.append(f"| {label} | {timing.cell()} | {loop.median / timing.median:.2f} | {corpus.mb / timing.median:.0f} |")
        peak = max(t.peak_rss for label, t in timings.items() if label.startswith("aoe-runner"))
        lines += ["", f"Peak RSS of aoe-runner's process tree (parent and workers) on this corpus: {peak / 2**20:.0f} MiB.", ""]
    lines += [
        "The bare loop reads and `json.loads` every file in one process and keeps nothing. aoe-runner reads each file",
        "once (msgspec into typed structs, its records 256 at a time), checks and merges every record, writes its",
        "cache and the summary (the operators' rows made and written 512 at a time); on more than 48 MB it shares",
        "the files between this process and one worker per further CPU (each takes the next",
        "file). `cache off` (`AOE_RUNNER_CACHE=off`) shows what writing the cache costs a first report (the merged",
        "set: a file's own parsed state is stored only once a report finds it unchanged in a stored set that no longer",
        "fits). Both variants are regular installs of the checkout into scratch venvs: `compiled` is what `pip",
        "install .` installs where mypyc and a C compiler can build it (report's hot modules compiled; installed in",
        f"{f.installs['default']:.0f} s here), `plain` what `AOE_RUNNER_MYPYC=0 pip install .` installs and any",
        f"machine without a compiler gets (installed in {f.installs['plain']:.0f} s); the compiled JSON is checked",
        "byte-identical to the plain one's before timing. jq runs `" + JQ_FILTER + "` over all files.",
        "",
        "### Where the time goes",
        "",
        render_phases(f.phases),
        "",
        "### A second report with one new file (the cache)",
        "",
        "| corpus | CPUs | first report, all files but one: wall (min-max) | CPU | second, all files: wall (min-max) | CPU "
        "| second / first | all files again: wall (min-max) | CPU | the new file alone, cache off: wall (min-max) | CPU "
        "| alone / first |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, cpus), r in f.cache.items():
        lines.append(
            f"| {name} | {cpus} | {r.first.cell()} | {r.second.cell()} | {r.ratio:.2f} | {r.again.cell()} "
            f"| {r.alone.cell()} | {r.floor:.2f} |"
        )
    variant = "compiled" if f.compiled else "plain"
    lines += [
        "",
        f"({variant} variant; the CPU settings interleaved round by round.) The second report finds the merged state of",
        "the first one's files in the cache (`$AOE_RUNNER_HOME/cache/report`), checks each file's device, inode, size,",
        "mtime and ctime (and content hash for files changed within 2 s of being read, or under 1 MiB), parses only",
        "the new file and writes the summary; it stores what the new file adds beside the name of the set it adds to,",
        "not the whole set again. The third report, over the same files again, parses nothing: it is what loading the",
        "cached state, summarising it and writing the summary cost on their own, so second minus third is what the new",
        "file costs. The first report shares its files with a worker on the machine's CPUs; a second or third has",
        "only one new file or none, so it gains nothing from a second CPU. The new file alone, with the cache off, is",
        "the least any second report could cost: Python and aoe-runner starting, reading that file, summarising the",
        "entries it holds and writing them. A second report costs that plus what it does per entry of the whole bank",
        "(loading the stored state, ranking and summarising every entry, writing every row).",
        "",
        "### Growth with files (bank corpus, machine's CPUs, median of 2 rounds)",
        "",
        "| files | MB | plain: wall (min-max) | CPU | peak RSS | compiled: wall (min-max) | CPU | peak RSS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for count, mb, plain, compiled in f.growth:
        compiled_cells = f"{compiled.cell()} | {compiled.peak_rss / 2**20:.0f} MiB" if compiled.wall else "- | - | -"
        lines.append(f"| {count} | {mb:.0f} | {plain.cell()} | {plain.peak_rss / 2**20:.0f} MiB | {compiled_cells} |")
    lines += [
        "",
        "Time grows with the records read; memory with the distinct bank entries (here 6,000 at every size), not",
        "with files: each process holds one file's decoded data at a time. Workers start at 48 MB, which",
        "adds a process (and its RSS) between 10 and 40 files.",
        "",
        f"Peak RSS of a report of `sample_results/`: {f.small_rss / 2**20:.0f} MiB.",
        "",
    ]
    return "\n".join(lines)


def _load(values: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.2f}" for value in values)


def target_rows(f: ReportFigures) -> list[tuple[str, str, float, float, bool]]:
    """Issue 41's targets: on one CPU, the default install (compiled) at 1.5x the json.loads loop or more and the
    plain fallback at 1.0x; jq at least 3x slower; the process tree under 300 MiB; a second report at 0.2x."""
    rows: list[tuple[str, str, float, float, bool]] = []
    for corpus in f.corpora:
        t = f.throughput[corpus.name]
        loop = t["json.loads loop, 1 CPU"].median
        for variant, least in (("aoe-runner compiled", 1.5), ("aoe-runner plain", 1.0)):
            if variant in t:
                name = f"{variant} vs the json.loads loop, 1 CPU, {corpus.name}"
                rows.append((name, f">= {least:.2f}", loop / t[f"{variant}, 1 CPU"].median, least, True))
        fastest = "aoe-runner compiled" if "aoe-runner compiled" in t else "aoe-runner plain"
        if "jq" in t:
            rows.append((f"{fastest} vs jq, {corpus.name}", ">= 3.00", t["jq"].median / t[fastest].median, 3.0, True))
        peak = max(timing.peak_rss for label, timing in t.items() if label.startswith("aoe-runner"))
        rows.append((f"peak RSS of the process tree (MiB), {corpus.name}", "<= 300", peak / 2**20, 300, False))
        for cpus in CACHE_CPUS:
            where = "" if cpus == "machine's CPUs" else f", {cpus}"
            ratio = f.cache[(corpus.name, cpus)].ratio
            rows.append((f"second report with one new file / first{where}, {corpus.name}", "<= 0.20", ratio, 0.2, False))
    return rows
