"""Where `aoe-runner report`'s time goes on one CPU, phase by phase, against the json.loads and msgspec loops.

Each phase is a separate process, pinned to one CPU, run with the python of a regular install (the compiled
default and the plain fallback, bench/installs.py) and timed inside itself (CPU time, after its imports): every
phase does what the one before it does and one step more, so the step's cost is the difference.

- `read`: read every result file
- `scan`: and decode each document with its operator records left raw (results/typed.decode_document)
- `decode`: and decode and check those records a batch at a time (results/parsed.RawRecords.batches)
- `merge`: and merge them into the bank (report/merge.BankState.add): everything `report` does but start-up,
  the summary and writing it
- the json.loads loop and an untyped msgspec loop read the same files and decode each (and keep nothing)

The phases import aoe-runner's internals, so they describe this checkout only.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

PHASES = ("json.loads", "msgspec", "read", "scan", "decode", "merge")
ONE_CPU = ["taskset", "-c", "0"]

# run inside the install's python; prints its CPU seconds
_PHASE_SCRIPT = """
import gc, sys, time
from pathlib import Path
phase, corpus = sys.argv[1], sys.argv[2]
files = sorted(Path(corpus).glob("aoe_result_*.json"))
gc.disable()  # as report runs its merge
if phase == "json.loads":
    import json as codec
elif phase == "msgspec":
    import msgspec.json as codec
else:
    from aoe_runner.report.merge import BankState
    from aoe_runner.results.parse import parse_result_file
    from aoe_runner.results.typed import decode_document
started = time.process_time()
state = None if phase in ("json.loads", "msgspec", "read", "scan", "decode") else BankState()
for path in files:
    data = path.read_bytes()
    if phase in ("json.loads", "msgspec"):
        codec.decode(data) if phase == "msgspec" else codec.loads(data)
    elif phase == "scan":
        decode_document(data, raw_records=True)
    elif phase == "decode":
        for _ in parse_result_file(str(path), data, 0.0).raw.batches():
            pass
    elif phase == "merge":
        state.add(parse_result_file(str(path), data, 0.0), spend=True)
print(time.process_time() - started)
"""


@dataclass
class PhaseFigures:
    corpus: str
    variant: str
    seconds: dict[str, list[float]] = field(default_factory=dict)

    def median(self, phase: str) -> float:
        return statistics.median(self.seconds[phase])


def measure(python: Path, variant: str, corpus: Path, rounds: int) -> PhaseFigures:
    """Interleaved rounds of every phase with `python` (a regular install's interpreter)."""
    figures = PhaseFigures(corpus.name, variant, {phase: [] for phase in PHASES})
    with tempfile.TemporaryDirectory(prefix="aoe-bench-phases-") as scratch:
        script = Path(scratch) / "phase.py"
        script.write_text(_PHASE_SCRIPT, encoding="utf-8")
        for _ in range(rounds):
            for phase in PHASES:
                done = subprocess.run(
                    [*ONE_CPU, str(python), str(script), phase, str(corpus)], capture_output=True, text=True, check=True
                )
                figures.seconds[phase].append(float(done.stdout))
    return figures


def render(all_figures: list[PhaseFigures]) -> str:
    lines = [
        "Where a 1-CPU report's time goes (`python bench/run.py --only report`, bench/report_phases.py): CPU seconds,",
        "median of the rounds (min-max), each phase in its own process after its imports; a step's cost is the",
        "difference from the phase above it. Start-up, the summary and writing it come on top of `merge`.",
        "",
        "| corpus, variant | json.loads loop | msgspec loop | read | + scan | + decode, check | + merge |",
        "|---|---|---|---|---|---|---|",
    ]
    for figures in all_figures:
        cells = [
            f"{figures.median(phase):.2f} ({min(figures.seconds[phase]):.2f}-{max(figures.seconds[phase]):.2f})"
            for phase in PHASES
        ]
        lines.append(f"| {figures.corpus}, {figures.variant} | {' | '.join(cells)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    given = Path(sys.argv[2])
    print(render([measure(Path(sys.argv[1]), "given", given, int(sys.argv[3]) if len(sys.argv) > 3 else 3)]))
