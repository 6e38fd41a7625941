"""The run history as a person reads it: `runs list` as a table, `runs show` as a short record.

Manifests hold paths, commands and log lines from users and scripts: every cell and line is shown through visible().
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from aoe_runner.common.colour import VERDICTS
from aoe_runner.common.safe_text import visible
from aoe_runner.common.words import size_text
from aoe_runner.render.numbers import finite, local_time, microseconds, plain, times
from aoe_runner.render.table import Column
from aoe_runner.render.table import render as render_table

if TYPE_CHECKING:
    from aoe_runner.runs.flows import PhaseRecord
    from aoe_runner.runs.index import RunRow
    from aoe_runner.runs.manifest import MarkerSeen, RunManifest
    from aoe_runner.runs.outcomes import RunListing
    from aoe_runner.runs.prune import Removal


MARKER_ORDER = ("tuning_on", "operator_finished", "tuning_finished")  # a run's life: the order markers are shown in


def _lifecycle_order(marker: MarkerSeen) -> int:
    """Markers from stdout and stderr arrive in no fixed order between the two: show them as the run goes."""
    return MARKER_ORDER.index(marker.kind) if marker.kind in MARKER_ORDER else len(MARKER_ORDER)


# A narrow terminal leaves out the details first (results, exit, device, host, then the start, which the run id
# also holds), the answers (time saved, speed-up) last.
LIST_COLUMNS = [
    Column("run"), Column("started", optional=True), Column("status", verdict=True), Column("mode"),
    Column.number("saved", optional=True, keep=1), Column.number("speed-up", optional=True, keep=1),
    Column("host", optional=True), Column.number("device", optional=True), Column.number("exit", optional=True),
    Column.number("results", optional=True), Column.text("script"),
]  # fmt: skip
CSV_HEADERS = {"saved": "saved µs"}  # csv holds numbers: the unit goes in the header


def run_list_json(listing: RunListing) -> str:
    import json
    from dataclasses import asdict

    lines = []
    for row in listing.rows:
        gain = listing.gain(row)
        saved, speedup = finite(gain.saved_us), finite(gain.median_speedup)  # JSON has no Infinity
        fields = {**asdict(row), "status": row.status.value, "saved_us": saved, "median_speedup": speedup}
        lines.append(json.dumps(fields) + "\n")
    return "".join(lines)


def run_list_csv(listing: RunListing) -> str:
    """Every column, host included; the time saved in µs and the speed-up as numbers."""
    from aoe_runner.render.csv_text import write_csv

    headers = [CSV_HEADERS.get(column.header, column.header) for column in LIST_COLUMNS]
    rows = [_cells(listing, row, text=False) for row in listing.rows]
    return write_csv(headers, [[cells[column.header] for column in LIST_COLUMNS] for cells in rows])


def run_list_markdown(listing: RunListing) -> str:
    from tabulate import tabulate

    from aoe_runner.common.safe_text import markdown

    columns = _columns(listing)
    rows = [_cells(listing, row, text=True) for row in listing.rows]
    cells = [[markdown(row[c.header]) for c in columns] for row in rows]
    return tabulate(cells, headers=[c.header for c in columns], tablefmt="github", disable_numparse=True) + "\n"


def render_run_list(listing: RunListing, width: int | None = None, colour: bool = False) -> str:
    if not listing.rows:
        return "no runs recorded\n"
    columns = _columns(listing)
    rows = [_cells(listing, row, text=True) for row in listing.rows]
    cells = [[visible(row[c.header]) for c in columns] for row in rows]
    return render_table(columns, cells, width, VERDICTS if colour else None) + "\n"


def _columns(listing: RunListing) -> list[Column]:
    """A listing's columns as a person reads them: the host only when many hosts share the store."""
    return [column for column in LIST_COLUMNS if column.header != "host" or listing.shared]


def _cells(listing: RunListing, row: RunRow, text: bool) -> dict[str, str]:
    """A row's cells by header; the time saved and speed-up as text shows them when `text`,
    else as numbers (empty when there are none)."""
    gain = listing.gain(row)
    saved, speedup = gain.saved_us, gain.median_speedup
    return {
        "run": row.id,
        "started": local_time(row.started_at),
        "status": row.status.value,
        "mode": row.mode,
        "host": row.host or "-",
        "device": str(row.device),
        "exit": _code(row.exit_code),
        "results": str(row.result_files),
        "saved": microseconds(saved) if text else plain(saved),
        "speed-up": times(speedup) if text else plain(speedup),
        "script": row.script,
    }


def render_run(manifest: RunManifest, run_dir: Path) -> str:
    fingerprint = manifest.fingerprint
    duration = f"{manifest.duration_s:.1f} s" if manifest.duration_s is not None else "-"
    lines = [
        f"run {manifest.id}: {manifest.status.value}, exit {_code(manifest.exit_code)}{_why(manifest)}",
        f"  script     {manifest.script} (sha256 {manifest.script_sha256[:12]}{_git(manifest)})",
        f"  command    {' '.join(manifest.command)}",
        f"  mode       {_mode(manifest)} on device {manifest.device}",
        f"  started    {local_time(manifest.started_at.isoformat())}, took {duration}",
        f"  host       {fingerprint.hostname}, CANN {fingerprint.cann_version or 'unknown'}, SoC {fingerprint.soc or 'unknown'}, "
        f"Python {fingerprint.python}",
        f"  record     {run_dir}{'' if run_dir.is_dir() else f' (on {fingerprint.hostname}; not reachable from here)'}",
        f"  log        {run_dir / manifest.log}",
        f"  work dir   {manifest.work_dir}",
        f"  progress   {manifest.progress.describe()}",
    ]
    lines += _flow_lines(manifest)
    if manifest.preflight is not None and manifest.preflight.forced:
        lines.append(f"  preflight  forced past: {', '.join(manifest.preflight.failed)}")
    for variable, value in sorted(manifest.environment.items()):
        lines.append(f"  env        {variable}={value}")
    for variable in manifest.environment_removed:
        lines.append(f"  env        {variable} removed")
    for marker in sorted(manifest.markers, key=_lifecycle_order):
        lines.append(f"  marker     {marker.kind} x{marker.count}: {marker.first_line}")
    for result in manifest.result_files:
        if result.error is not None:
            lines.append(f"  result     {result.recorded}: not read: {result.error}")
            continue
        state = " (partial)" if result.partial else ""
        reports = "1 report" if result.reports == 1 else f"{result.reports} reports"
        lines.append(f"  result     {result.recorded}: {reports}{state}")
    lines.append(f"  bank       {manifest.bank}: {manifest.bank_before.count} files before{_bank_after(manifest)}")
    return "\n".join(map(visible, lines)) + "\n"


def _flow_lines(manifest: RunManifest) -> list[str]:
    """How AOE was switched on: the framework and its call, each phase of a two-phase run, the offline CLI's output."""
    lines = []
    if manifest.framework is not None:
        lines.append(f"  framework  {manifest.framework} ({manifest.framework_source or 'not recorded how'})")
    switch = manifest.switch
    if switch is not None:
        said = f"cannot switch AOE on: {switch.error}" if switch.error else "; ".join(switch.calls)
        lines.append(f"  switch     {switch.framework} {switch.version or '?'}: {said}")
    if len(manifest.phases) > 1:
        for number, phase in enumerate(manifest.phases, start=1):
            lines.append(f"  phase {number}    {phase.name}: {_phase_outcome(phase)}: {' '.join(phase.command)}")
    offline = manifest.offline
    if offline is not None:
        kept = "kept" if offline.workspace_kept else "removed"
        workspace = f"; workspace {offline.workspace_bytes / 2**20:.1f} MiB, {kept}" if offline.workspace else ""
        resumes = f" (resumes run {offline.reload_of})" if offline.reload_of else ""
        label = "dump   " if manifest.framework == "pytorch" else "model  "
        lines.append(f"  {label}    {offline.model}{resumes}{workspace}")
        lines += [f"  tuned      {model}" for model in offline.tuned_models]
    return lines


def _phase_outcome(phase: PhaseRecord) -> str:
    if phase.started_at is None:
        return f"not run ({phase.skipped})" if phase.skipped else "not run"
    took = f" in {(phase.ended_at - phase.started_at).total_seconds():.1f} s" if phase.ended_at else ""
    ended = f"killed by {phase.signal}" if phase.signal else f"exit {_code(phase.exit_code)}"
    return f"{ended}{took}"


def _mode(manifest: RunManifest) -> str:
    link = manifest.verify
    if link is None:
        return manifest.mode_label
    tuning = f", bank of run {link.tuning_run}" if link.tuning_run else ""
    return f"verify {link.verification}, {link.arm} arm, repeat {link.repeat}{tuning}"


def _why(manifest: RunManifest) -> str:
    if manifest.stopped_by:
        return f" (stopped by {manifest.stopped_by})"
    if manifest.script_signal:
        return f" (script killed by {manifest.script_signal})"
    return ""


def _git(manifest: RunManifest) -> str:
    if manifest.git_commit is None:
        return ""
    modified = ", modified" if manifest.git_script_modified else ""
    return f", git {manifest.git_commit[:12]}{modified}"


def _bank_after(manifest: RunManifest) -> str:
    changes = manifest.bank_changes
    if changes is None:
        return ""
    if changes.empty:
        return ", unchanged"
    return f"; +{len(changes.added)} added, {len(changes.modified)} modified, {len(changes.removed)} removed"


def _code(code: int | None) -> str:
    return "-" if code is None else str(code)


def render_removal(removal: Removal, done: bool) -> str:
    """One line per run removed (or that would be), then what it gives back."""
    verb = "removed" if done else "would remove"
    lines = [
        visible(f"{verb} {row.id}  {local_time(row.started_at)}  {row.status.value:<11} {row.mode:<14} {row.script}")
        for row in removal.runs
    ]
    space = f"{size_text(removal.run_bytes)} of run records and {size_text(removal.blob_bytes)} of stored bank contents"
    lines.append(f"{verb} {len(removal.runs)} run{'' if len(removal.runs) == 1 else 's'}: {space}")
    return "\n".join(lines) + "\n"
