"""What published bank versions hold on to in this home: the bank inventories they are (with every blob those
name) and the tuning runs they were published from. `runs prune`, `runs rm` and the blob store's collect keep both.

Read from `releases/<name>/<N>.json`, which aoe_runner.releases.catalog writes: only the fields needed here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from aoe_runner.errors import InputError
from aoe_runner.runs.manifest import BankInventory


class _Source(msgspec.Struct):
    run: str


class _Pinned(msgspec.Struct):
    name: str
    number: int
    inventory: str
    sources: list[_Source]


@dataclass
class Pins:
    inventories: dict[str, str] = field(default_factory=dict)  # inventory id -> NAME@N
    runs: dict[str, list[str]] = field(default_factory=dict)  # run id -> the versions published from it

    def stubs(self, directory: str = "") -> list[BankInventory]:
        """Each pinned inventory, known by its id, as collect expands it."""
        from datetime import datetime, timezone

        moment = datetime.fromtimestamp(0, timezone.utc)
        return [BankInventory(directory=directory, exists=True, taken_at=moment, stored=sha) for sha in self.inventories]


def published_pins(home: Path) -> Pins:
    """Every version recorded in this home; InputError naming a record that cannot be read (nothing may then go)."""
    pins = Pins()
    root = home / "releases"
    try:
        names = sorted(entry.name for entry in os.scandir(root) if entry.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return pins
    except OSError as error:
        raise InputError(str(root), f"cannot read directory: {error.strerror}") from None
    for name in names:
        for entry in sorted(os.listdir(root / name)):
            if not entry.endswith(".json"):
                continue
            path = root / name / entry
            try:
                pinned = msgspec.json.decode(path.read_bytes(), type=_Pinned)
            except (OSError, msgspec.MsgspecError) as error:
                raise InputError(str(path), f"cannot read the published version: {error}") from None
            label = f"{pinned.name}@{pinned.number}"
            pins.inventories[pinned.inventory] = label
            for source in pinned.sources:
                pins.runs.setdefault(source.run, []).append(label)
    return pins
