"""`npu-smi info` as real hosts print it, read into the user's hardware inventory (AOE.md §5).

Every layout has a name row per NPU (`| 2     910B4 | OK | ...`) followed by chip rows (`| 0 | 0000:C2:00.0 | ...`);
the second header line tells the layouts apart:
- `| Chip |` on Atlas A2 (910B*) and first-generation 910: one chip per NPU, NPU ids need not start at 0;
- `| Chip  Phy-ID |` on Atlas A3: two chips per NPU, each under its own name row that says only `Ascend910`;
- `| Chip    Device |` on 310/310P: power may be `NA`; a 310P3 Duo card shows two chips under one NPU id.
The version banner may be missing, and a process table follows the device table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from aoe_runner.common.plain_data import FIELD_DOCSTRINGS

Layout = Literal["Chip", "Chip Phy-ID", "Chip Device"]
A2, A3 = "Atlas A2", "Atlas A3"
_BANNER = re.compile(r"npu-smi\s+\S+\s+Version:\s*(\S+)")
_BUS_ID = re.compile(r"[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]|NA")
_NAME_ROW = re.compile(r"(\d+)\s+(\S.*)")
_CHIP_ROW = re.compile(r"\d+(?:\s+(?:\d+|NA|-))?")


@dataclass(kw_only=True)
class ListedNpu:
    """One NPU of `npu-smi info`: its id as npu-smi numbers it, and its chips."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    id: int
    name: str
    """As printed, e.g. 910B3, Ascend910, 310P3."""
    health: str
    """OK, Warning, Alarm, Critical...; differing chips are joined with '/'."""
    chips: int


@dataclass(kw_only=True)
class Npus:
    __pydantic_config__ = FIELD_DOCSTRINGS

    devices: list[int]
    """N of every /dev/davinci<N>."""
    npu_smi: str | None
    """Path of npu-smi, when on PATH."""
    npu_smi_error: str | None = None
    chips: list[str] = field(default_factory=list)
    """The name npu-smi prints for each chip, e.g. 910B3."""
    listed: list[ListedNpu] = field(default_factory=list)
    """The NPUs `npu-smi info` lists."""
    layout: Layout | None = None
    """npu-smi's second header line, which tells Atlas A3 from the rest."""
    series: str | None = None
    """Atlas A2, Atlas A3 or inference (Ascend310*), when the table tells."""
    npu_smi_version: str | None = None
    """From npu-smi's banner line, when it prints one."""

    def describe(self) -> str:
        """What npu-smi showed, e.g. `NPU 2,3 910B4 OK; 2 NPUs, 2 chips, Atlas A2`, or why it showed nothing."""
        if self.npu_smi is None:
            return "not found"
        if self.npu_smi_error:
            return self.npu_smi_error
        if not self.listed:  # facts saved before NPU ids were recorded still hold the chip names
            return ", ".join(self.chips) if self.chips else "listed no NPUs"
        groups = "; ".join(f"NPU {_ids(ids)} {name} {health}" for (name, health), ids in _grouped(self.listed))
        chips = sum(npu.chips for npu in self.listed)
        total = f"{_count(len(self.listed), 'NPU')}, {_count(chips, 'chip')}"
        if self.series == A3:
            return f"{groups}; {total}, {A3} layout (npu-smi does not name the exact SoC)"
        return f"{groups}; {total}" + (f", {self.series}" if self.series else "")


class NpuSmiTable(NamedTuple):
    version: str | None
    layout: Layout | None
    listed: list[ListedNpu]
    chip_names: list[str]


class _Rows:
    """The rows of one NPU id: a name row per chip on A3 and 310P3, else one name row and its chip rows."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.health: list[str] = []
        self.chip_rows = 0

    def listed(self, npu_id: int) -> ListedNpu:
        chips = max(len(self.health), self.chip_rows)
        return ListedNpu(id=npu_id, name=self.name, health="/".join(dict.fromkeys(self.health)), chips=chips)


def parse_npu_smi(text: str) -> NpuSmiTable:
    version: str | None = None
    layout: Layout | None = None
    rows: dict[int, _Rows] = {}
    chip_names: list[str] = []
    current: _Rows | None = None
    for line in text.splitlines():
        if not line.lstrip().startswith("|"):
            continue  # borders
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        banner = _BANNER.search(line)
        if banner:
            version = banner.group(1)
        elif "Process id" in line or "Process name" in line:
            break  # the process table: its rows look like chip rows
        elif cells[0].startswith("Chip"):
            layout = _layout(cells[0])
        elif len(cells) < 2 or cells[0].startswith("NPU"):
            continue
        elif _BUS_ID.fullmatch(cells[1]) and _CHIP_ROW.fullmatch(cells[0]):
            if current is not None:
                current.chip_rows += 1
        elif match := _NAME_ROW.fullmatch(cells[0]):
            name = match.group(2).strip()
            current = rows.setdefault(int(match.group(1)), _Rows(name))
            current.health.append(cells[1])
            chip_names.append(name)
    return NpuSmiTable(version, layout, [entry.listed(npu_id) for npu_id, entry in rows.items()], chip_names)


def _layout(header: str) -> Layout:
    if "Phy-ID" in header:
        return "Chip Phy-ID"
    return "Chip Device" if "Device" in header else "Chip"


def series_of(table: NpuSmiTable) -> str | None:
    """The product line: the layout marks Atlas A3; the name marks Atlas A2 (910B<n>) and inference chips."""
    names = [npu.name.removeprefix("Ascend") for npu in table.listed]
    if table.layout == "Chip Phy-ID":
        return A3
    if any(re.match(r"910B\d", name) for name in names):
        return A2
    if any(name.startswith("310") for name in names):
        return "inference (Ascend310*)"
    return None


def soc_of(table: NpuSmiTable) -> tuple[str | None, str]:
    """(SoC name, where it came from); None, with the reason, when npu-smi does not name the exact SoC."""
    if not table.listed:
        return None, "unknown: no --soc and no chip name from npu-smi"
    name = table.listed[0].name
    if table.layout == "Chip Phy-ID":
        why = f"npu-smi shows the Atlas A3 layout and names the chip only '{name}'"
        return None, f"unknown: {why}; pass --soc (e.g. Ascend910_9382)"
    bare = name.removeprefix("Ascend")
    if bare == "910":
        return None, "unknown: npu-smi names the chip only 'Ascend910' (a first-generation 910 or an Atlas A3); pass --soc"
    return f"Ascend{bare}", "npu-smi info"


def _grouped(listed: list[ListedNpu]) -> list[tuple[tuple[str, str], list[int]]]:
    groups: list[tuple[tuple[str, str], list[int]]] = []
    for npu in listed:
        key = (npu.name, npu.health)
        if groups and groups[-1][0] == key:
            groups[-1][1].append(npu.id)
        else:
            groups.append((key, [npu.id]))
    return groups


def _ids(ids: list[int]) -> str:
    """0-7 for a run of consecutive ids, 1792,1793 otherwise."""
    if len(ids) > 2 and ids == list(range(ids[0], ids[0] + len(ids))):
        return f"{ids[0]}-{ids[-1]}"
    return ",".join(str(i) for i in ids)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("s" if n != 1 else "")
