"""Where a second `report` spends its time, and what a row cache or a forked render would save of it.

Issue 13 asks that a report over the same files plus one new file take at most 0.2 of the first report's wall
time, with the machine's CPUs. This benchmark measures the evidence for that target on the random-names corpus
(30,000 bank entries), with the compiled variant:

- the first and second reports as users run them (the CLI, output to /dev/null as report_bench's);
- the second report's steps one by one, in one process that calls the library as the CLI does, and Python's own
  start-up (`python -c pass`) beside it;
- two designs for the JSON render, each checked byte-identical to the real one and timed against it in the same
  process: a row cache at its best (the previous report's operator rows kept in one blob, mapped; runs of rows
  whose entries the new file did not touch copied as one slice each; only touched entries rendered), and a
  render shared with a forked child (each renders half of the rows; the child's half comes back in a memfd).

Each round (interleaved): a fresh aoe-runner home, the first report over all files but the last, a copy of that
home for each in-process measurement, then the second report. Run it with `python bench/run.py --only second`.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from installs import compiled_tree

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

STEPS = (
    ("imports", "the modules a report loads (aoe_runner.cli.main, reporting, the cache, the JSON writer)"),
    ("stored set", "find and read the first report's merged state"),
    ("new file", "parse the new file and merge its records"),
    ("fold in", "fold the new file's state into the stored one"),
    ("store", "store what the new file adds, and trim the cache"),
    ("summary", "rank the entries and total them (summary_data.summary_parts)"),
    ("render", "the JSON text (operator rows made and written by orjson)"),
    ("write", "write it to /dev/null"),
)
DESIGNS = ("row cache", "forked render")
PAID_BY_ANY = ("imports", "new file", "fold in", "store", "write")  # whatever the design of the stored state
PER_ENTRY = ("stored set", "summary", "render")  # the steps that go over every entry of the bank


@dataclass
class Figures:
    first: list[tuple[float, float]] = field(default_factory=list)  # wall, CPU (the process tree's)
    second: list[tuple[float, float]] = field(default_factory=list)
    python: list[tuple[float, float]] = field(default_factory=list)
    steps: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # wall, CPU
    designs: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # the real render, the design's
    touched: int = 0
    entries: int = 0
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rounds: int = 0


def measure(rounds: int) -> Figures:
    import report_bench

    figures = Figures(load_before=os.getloadavg(), rounds=rounds)
    corpus = report_bench.prepare_corpora(quick=False)[1]
    figures.entries = corpus.entries
    with tempfile.TemporaryDirectory(prefix="aoe-bench-second-") as scratch_name:
        scratch = Path(scratch_name)
        tree = compiled_tree(scratch)
        if tree is None:
            raise SystemExit("this benchmark needs the compiled variant (mypy and a C compiler)")
        command = [sys.executable, "-c", report_bench.COMPILED_LAUNCHER, str(tree), "report"]
        files = [str(path) for path in corpus.files]
        for number in range(rounds):
            print(f"  round {number + 1}/{rounds}", flush=True)
            home = scratch / "home"
            shutil.rmtree(home, ignore_errors=True)
            env = {**os.environ, "AOE_RUNNER_HOME": str(home)}
            figures.first.append(report_bench.run([*command, *files[:-1], "--format", "json"], env=env)[:2])
            for mode in ("steps", *DESIGNS):
                copy = scratch / "copy"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(home, copy, symlinks=True)
                found = _in_process(mode, tree, files, {**env, "AOE_RUNNER_HOME": str(copy)})
                if mode == "steps":
                    for step, timing in found["steps"].items():
                        figures.steps.setdefault(step, []).append(tuple(timing))
                    figures.touched = found["touched"]
                else:
                    figures.designs.setdefault(mode, []).append(tuple(found["design"]))
            figures.python.append(report_bench.run([sys.executable, "-c", "pass"])[:2])
            figures.second.append(report_bench.run([*command, *files, "--format", "json"], env=env)[:2])
    figures.load_after = os.getloadavg()
    return figures


def _in_process(mode: str, tree: Path, files: list[str], env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, __file__, mode, str(tree), *files], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the in-process measurement ({mode}) failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


# In the measuring process: the second report's steps, then a design against the real render.


class _Clock:
    def __init__(self) -> None:
        self.times: dict[str, tuple[float, float]] = {}
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def skip(self) -> None:
        """Start the next step now: what ran since the last lap is not one of the report's steps."""
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def lap(self, step: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.times[step] = (wall - self._wall, cpu - self._cpu)
        self._wall, self._cpu = wall, cpu


def _second_report(mode: str, tree: str, files: list[str]) -> dict[str, object]:
    sys.meta_path = [finder for finder in sys.meta_path if "editable" not in repr(finder)]
    sys.path.insert(0, tree)
    clock = _Clock()
    import aoe_runner.cli.main  # noqa: F401
    from aoe_runner.common import collector
    from aoe_runner.render.json_format import JsonFormatter
    from aoe_runner.report import api as reporting
    from aoe_runner.report.cache import ReportCache

    clock.lap("imports")
    with collector.paused():
        cache = ReportCache.from_environment()
        assert cache is not None
        stored = cache.get_set(reporting._regular_statuses(files))
        assert stored is not None and len(stored.stamps) == len(files) - 1, "the first report's set is not stored"
        clock.lap("stored set")
        added, _, _, stamps = reporting._merge_chunk(files[-1:], cache)
        clock.lap("new file")
        before = _rows_before(stored.state, added) if mode == "row cache" else None
        touched = sum(stored.state.operators.find(e.key, e.types, e.mode) is not None for e in added.operators.entries)
        clock.skip()
        state = stored.state
        state.absorb(added)
        clock.lap("fold in")
        cache.put_set(stored.stamps + stamps, state, stored, added)
        cache.trim()
        clock.lap("store")
        loaded = reporting.Loaded(state, len(files))
        parts = loaded.parts
        clock.lap("summary")
        pieces = JsonFormatter().summary_parts(*parts, None, lambda: loaded.summary)
        clock.lap("render")
        with open(os.devnull, "wb") as sink:
            sink.writelines(pieces)
        clock.lap("write")
        if mode == "steps":
            return {"steps": clock.times, "touched": touched}
        expected = b"".join(pieces)
        real = _timed(lambda: JsonFormatter().summary_parts(*parts, None, lambda: loaded.summary))
        if mode == "row cache":
            design = _timed(lambda: _render_from_rows(parts, before))
        else:
            design = _timed(lambda: _forked_render(parts))
        real_again = _timed(lambda: JsonFormatter().summary_parts(*parts, None, lambda: loaded.summary))
        if design[2] != expected or real[2] != expected:
            raise SystemExit(f"{mode}: the design's JSON differs from the real render's")
        return {"design": [(real[0] + real_again[0]) / 2, design[0], (real[1] + real_again[1]) / 2, design[1]]}


def _timed(render) -> tuple[float, float, bytes]:  # type: ignore[no-untyped-def]
    """Wall and CPU seconds of a render and of writing it to /dev/null, and its text."""
    wall, cpu = time.perf_counter(), time.process_time()
    pieces = render()
    with open(os.devnull, "wb") as sink:
        sink.writelines(pieces)
    return time.perf_counter() - wall, time.process_time() - cpu, b"".join(pieces)


_ROW_END = b"\n    }"  # how a row of the operators ends at their depth (deeper lines are indented further)


def _rows_before(state, added):  # type: ignore[no-untyped-def]
    """What a row cache would hold: the operators' rows of the summary before the new file, in one mapped blob, each
    row's place in it by entry; and the entries the new file touches (their rows must be made again)."""
    import mmap

    import orjson

    from aoe_runner.render.json_format import BATCH_ROWS
    from aoe_runner.report.summary_data import operator_rows, summary_parts

    _, ranked = summary_parts(state, 1.0)
    blob, places = bytearray(), {}
    for start in range(0, len(ranked), BATCH_ROWS):
        batch = ranked[start : start + BATCH_ROWS]
        text = orjson.dumps({"operators": operator_rows(batch)}, option=orjson.OPT_INDENT_2)
        for entry, row in zip(batch, _split_rows(text), strict=True):
            if blob:
                blob += b",\n"  # as rows are joined in the summary: a run of them is one slice
            places[id(entry)] = (len(blob), len(blob) + len(row))
            blob += row
    handle = tempfile.TemporaryFile()
    handle.write(blob)
    handle.flush()
    mapped = mmap.mmap(handle.fileno(), 0, prot=mmap.PROT_READ)
    dirty = {id(found) for e in added.operators.entries if (found := state.operators.find(e.key, e.types, e.mode))}
    for key in dirty:
        places.pop(key, None)
    return mapped, places


def _split_rows(text: bytes) -> list[bytes]:
    """The rows of orjson's indented {"operators": [...]}, each from its `    {` to its `    }`."""
    body = text[text.index(b"[") + 2 : text.rindex(b"]") - 3]
    rows, start = [], 0
    while start < len(body):
        end = body.index(_ROW_END, start) + len(_ROW_END)
        rows.append(body[start:end])
        start = end + 2  # past ",\n"
    return rows


def _render_from_rows(parts, before):  # type: ignore[no-untyped-def]
    """The JSON text with the rows of untouched entries copied from the cache, a run of consecutive ones at a time."""
    import orjson

    from aoe_runner.render.json_format import BATCH_ROWS, json_pieces
    from aoe_runner.report.summary_data import operator_rows

    data, ranked = parts
    mapped, places = before
    view = memoryview(mapped)
    found = [places.get(id(entry)) for entry in ranked]
    todo = [entry for entry, place in zip(ranked, found, strict=True) if place is None]
    batches = (operator_rows(todo[start : start + BATCH_ROWS]) for start in range(0, len(todo), BATCH_ROWS))
    made = iter([row for rows in batches for row in _split_rows(orjson.dumps({"operators": rows}, option=orjson.OPT_INDENT_2))])
    body: list[bytes | memoryview] = []
    run_start = run_end = -1
    for place in found:
        if place is not None and place[0] == run_end + 2:  # the next row in the cache
            run_end = place[1]
            continue
        if run_start >= 0:
            body.append(view[run_start:run_end])
        if place is None:
            body.append(next(made))
            run_start = run_end = -1
        else:
            run_start, run_end = place
    if run_start >= 0:
        body.append(view[run_start:run_end])
    pieces = json_pieces(data, iter([]))
    assert pieces is not None
    return [pieces[0], b"[\n", *_joined(body), b"\n  ]", pieces[-1]]


def _joined(body: list[bytes | memoryview]) -> list[bytes | memoryview]:
    out: list[bytes | memoryview] = []
    for piece in body:
        if out:
            out.append(b",\n")
        out.append(piece)
    return out


def _forked_render(parts):  # type: ignore[no-untyped-def]
    """The JSON text, the second half of the rows rendered by a forked child into a memfd."""
    from aoe_runner.render.json_format import BATCH_ROWS, JsonFormatter

    data, ranked = parts
    half = len(ranked) // 2 // BATCH_ROWS * BATCH_ROWS
    memfd = os.memfd_create("rows")
    child = os.fork()
    if child == 0:
        try:
            theirs = JsonFormatter().summary_parts(data, ranked[half:], None, None)
            with os.fdopen(memfd, "wb", closefd=False) as handle:
                handle.writelines(theirs[1:-1])
        finally:
            os._exit(0)
    mine = JsonFormatter().summary_parts(data, ranked[:half], None, None)
    os.waitpid(child, 0)
    theirs_text = os.pread(memfd, os.fstat(memfd).st_size, 0)
    os.close(memfd)
    return [*mine[:-2], b",", theirs_text[1:], mine[-1]]  # theirs_text: "[", its rows, "\n  ]"


# docs/benchmarks.md


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"


def _cell(runs: list[tuple[float, float]]) -> str:
    return f"{_ms([w for w, _ in runs])} | {statistics.median(c for _, c in runs) * 1000:.0f} ms"


def render(f: Figures) -> str:
    first, second = statistics.median(w for w, _ in f.first), statistics.median(w for w, _ in f.second)
    steps = {step: ([w for w, _ in runs], [c for _, c in runs]) for step, runs in f.steps.items()}
    lines = [
        "## Where a second report's time goes",
        "",
        f"Load average before {_load(f.load_before)}, after {_load(f.load_after)} (2 CPUs, shared with other jobs). "
        f"{f.rounds} interleaved rounds; each cell: median (min-max). The random-names corpus (80 files, {f.entries:,} "
        f"bank entries), compiled variant; the new file touches {f.touched:,} of the stored entries.",
        "",
        "| what | wall | CPU |",
        "|---|---|---|",
        f"| first report, all files but one (the CLI) | {_cell(f.first)} |",
        f"| second report, all files (the CLI) | {_cell(f.second)} |",
        f"| second / first | {second / first:.2f} (target 0.20: {0.2 * first * 1000:.0f} ms) | |",
        f"| Python's start-up (`python -c pass`) | {_cell(f.python)} |",
    ]
    for step, about in STEPS:
        walls, cpus = steps[step]
        lines.append(f"| step: {step}: {about} | {_ms(walls)} | {statistics.median(cpus) * 1000:.0f} ms |")
    median = {step: statistics.median(walls) for step, (walls, _) in steps.items()}
    python = statistics.median(w for w, _ in f.python)
    cli = second - python - sum(median.values())
    shared = python + sum(median[step] for step in PAID_BY_ANY)
    left = 0.2 * first - shared - cli
    lines += [
        f"| the CLI's own work (the second report less start-up and the steps) | {cli * 1000:.0f} ms | |",
        f"| what any second report pays: start-up, {', '.join(PAID_BY_ANY)} | {shared * 1000:.0f} ms | |",
        f"| left of the target for reading, summarising and writing {f.entries:,} entries | {left * 1000:.0f} ms "
        f"({left / f.entries * 1e6:.1f} µs an entry; today {sum(median[s] for s in PER_ENTRY) * 1000:.0f} ms) | |",
    ]
    lines += [
        "",
        "Two designs for the render, each timed against the real render in the same process (both writing to "
        "/dev/null) and checked byte-identical to it:",
        "",
        "| design | real render: wall | the design: wall | saved | CPU: real, design | second / first with that saving |",
        "|---|---|---|---|---|---|",
    ]
    for design in DESIGNS:
        runs = f.designs[design]
        real, mine = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        cpu_real, cpu_mine = statistics.median(r[2] for r in runs), statistics.median(r[3] for r in runs)
        lines.append(
            f"| {design} | {real * 1000:.0f} ms | {mine * 1000:.0f} ms | {(real - mine) * 1000:.0f} ms | "
            f"{cpu_real * 1000:.0f} ms, {cpu_mine * 1000:.0f} ms | {(second - (real - mine)) / first:.2f} |"
        )
    lines += [
        "",
        "The row cache is measured at its best: its rows are already in memory (mapped), and the cost of storing "
        "them is left out. A forked child shares the parent's memory copy-on-write: every object either process "
        "touches (a reference count is a write) copies its page, so both halves run slower than half the render.",
    ]
    return "\n".join(lines) + "\n"


def _load(values: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.2f}" for value in values)


def target_rows(f: Figures) -> list[tuple[str, str, float, float, bool]]:
    return []  # report_bench's cache section holds the target's row


if __name__ == "__main__":
    print(json.dumps(_second_report(sys.argv[1], sys.argv[2], sys.argv[3:])))
