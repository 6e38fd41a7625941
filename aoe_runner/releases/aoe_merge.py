"""`bank publish --merge-with-aoe`: AOE's own bank merge tool combines several runs' banks.

CANN ships it as `python/site-packages/schedule_search/msoptune.py` under the toolkit, run as `python3 msoptune.py
--merge SRC1:SRC2... DST` (Huawei's "Repository Merging": operator banks of one SoC; runtime_kb files are never
merged). aoe-runner never edits a bank file itself: it stages each run's bank, as the run left it and without what
AOE's rules leave out, into a directory of its own, runs the tool into an empty one, and publishes what the tool
wrote there. The stage is removed afterwards, whatever happened.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from aoe_runner.errors import InputError
from aoe_runner.frameworks.offline import toolkits
from aoe_runner.releases.pull import write_tree
from aoe_runner.runs.bank import take_inventory
from aoe_runner.runs.history import RunStore
from aoe_runner.runs.manifest import BankFile, BankInventory

TOOL_UNDER_TOOLKIT = "python/site-packages/schedule_search/msoptune.py"
MERGE_TIMEOUT_S = 3600.0
EPOCH = datetime.fromtimestamp(0, timezone.utc)  # a staged bank's inventory is never kept: its time does not matter


@dataclass(frozen=True)
class Merged:
    files: list[BankFile]
    directories: list[str]
    tool: str  # which tool did it: its path and the CANN version


def find_merge_tool(env: dict[str, str] | None = None) -> Path:
    """msoptune.py of the CANN toolkit the environment names (or the usual install roots); InputError naming every
    place looked at when there is none."""
    environment = dict(os.environ if env is None else env)
    places = toolkits(environment, Path.home())
    for toolkit in places:
        candidate = toolkit / TOOL_UNDER_TOOLKIT
        if candidate.is_file():
            return candidate
    raise InputError(
        "--merge-with-aoe",
        f"AOE's bank merge tool was not found (under {', '.join(map(str, places))}: {TOOL_UNDER_TOOLKIT}): it comes "
        "with the CANN toolkit; source its set_env.sh",
    )


def merge_banks(store: RunStore, banks: list[tuple[str, list[BankFile]]], name: str) -> Merged:
    """Stage each (run, files) from the blob store, merge them with AOE's tool, and keep what it wrote."""
    tool = find_merge_tool()
    stage = store.home / "staging" / f"merge-{name}-{os.getpid()}"
    if ":" in str(stage):
        raise InputError(str(stage), "AOE's merge tool separates its sources with ':', which this path holds")
    shutil.rmtree(stage, ignore_errors=True)
    try:
        sources = []
        for number, (run, files) in enumerate(banks, 1):
            source = stage / f"{number}-{run}"
            stage.mkdir(parents=True, exist_ok=True)
            write_tree(source, BankInventory(directory=str(source), exists=True, files=files, taken_at=EPOCH), store.blobs)
            sources.append(str(source))
        target = stage / "merged"
        target.mkdir(mode=0o700)
        made = os.lstat(target)
        _run_tool(tool, sources, target)
        now = _lstat_or_none(target)
        if now is None or not stat.S_ISDIR(now.st_mode) or (now.st_dev, now.st_ino) != (made.st_dev, made.st_ino):
            raise InputError(str(tool), f"AOE's merge tool replaced its output directory {target}; nothing was published")
        merged = take_inventory(target, store.blobs)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    from aoe_runner.preflight.facts import gather_facts

    cann = gather_facts(count_history=False).cann.version or "CANN version unknown"
    return Merged(merged.files, merged.directories or [], f"{tool} --merge ({cann})")


def _run_tool(tool: Path, sources: list[str], target: Path) -> None:
    python = shutil.which("python3") or sys.executable  # the interpreter Huawei's instructions name
    command = [python, str(tool), "--merge", ":".join(sources), str(target)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, errors="replace", timeout=MERGE_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise InputError(str(tool), f"AOE's merge tool did not finish in {MERGE_TIMEOUT_S:g} s; nothing was published") from None
    except OSError as error:
        raise InputError(str(tool), f"AOE's merge tool cannot be run: {error.strerror}; nothing was published") from None
    if done.returncode != 0:
        said = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        last = f": {said[-1][:300]}" if said else ""
        raise InputError(str(tool), f"AOE's merge tool failed (exit {done.returncode}){last}; nothing was published")


def _lstat_or_none(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None
