"""Runs that are kept or removed together: the runs of one verification (its baseline and tuned arms, every repeat),
which mean something only beside each other; any other run is a unit of its own."""

from __future__ import annotations

from dataclasses import dataclass

from aoe_runner.common.words import count
from aoe_runner.runs.history import RunStore
from aoe_runner.runs.index import RunRow

VERIFY = "verify"


@dataclass(frozen=True)
class Unit:
    rows: tuple[RunRow, ...]  # newest first
    verification: str | None  # the verification's id, for a verify run's unit


def units_of(store: RunStore, rows: list[RunRow]) -> list[Unit]:
    """Rows (newest first) in units, each at the place of its newest run. A verify run whose manifest cannot be read
    is a unit of its own (the warning says why)."""
    members: list[list[RunRow]] = []
    names: list[str | None] = []
    by_verification: dict[str, list[RunRow]] = {}
    for row in rows:
        verification = _verification(store, row)
        if verification is None:
            members.append([row])
            names.append(None)
        elif verification in by_verification:
            by_verification[verification].append(row)
        else:
            by_verification[verification] = [row]
            members.append(by_verification[verification])
            names.append(verification)
    return [Unit(tuple(unit), name) for unit, name in zip(members, names, strict=True)]


def whole_units(store: RunStore, chosen: set[str]) -> tuple[list[RunRow], list[str]]:
    """Every run of each unit that holds a chosen run (newest first), and a note per verification that a choice
    widened: a verification's runs are removed together."""
    rows: list[RunRow] = []
    notes: list[str] = []
    for unit in units_of(store, store.list()):
        named = [row.id for row in unit.rows if row.id in chosen]
        if not named:
            continue
        rows += unit.rows
        if len(named) < len(unit.rows):
            notes.append(
                f"run {named[0]} is one of the {count(len(unit.rows), 'run')} of verification {unit.verification}: "
                "they go together"
            )
    return rows, notes


def kept_summary(store: RunStore, removed: list[RunRow], done: bool) -> str:
    """What stays in the history once `removed` go, by kind: `kept 3 tuning runs, 1 verification (4 runs)` (`would
    keep`, when nothing was removed)."""
    going = {row.id for row in removed}
    units = units_of(store, [row for row in store.list() if row.id not in going])
    single = [unit.rows[0] for unit in units if unit.verification is None]
    tuning = sum(row.kind != VERIFY for row in single)
    verifications = [unit for unit in units if unit.verification is not None]
    parts = [count(tuning, "tuning run")]
    if verifications:
        runs = count(sum(len(unit.rows) for unit in verifications), "run")
        parts.append(f"{count(len(verifications), 'verification')} ({runs})")
    loose = len(single) - tuning
    if loose:
        parts.append(count(loose, "verify run") + " whose verification could not be read")
    return ("kept " if done else "would keep ") + ", ".join(parts)


def _verification(store: RunStore, row: RunRow) -> str | None:
    if row.kind != VERIFY:
        return None
    manifest = store.load_or_warn(row.id)
    return manifest.verify.verification if manifest is not None and manifest.verify is not None else None
