"""Host facts: everything the preflight checks need, measured once, with where each value came from.

Facts are data: they can be saved as JSON on one host and checked on another (`--save-facts`,
`--facts`), which is also how the tests check hosts we do not have.
"""

from __future__ import annotations

import getpass
import os
import platform
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from aoe_runner.common.devlock import LockHolder, current_holder
from aoe_runner.common.home import HOME_VARIABLE, runner_home
from aoe_runner.common.lock_directory import LockUnusable
from aoe_runner.common.plain_data import FIELD_DOCSTRINGS
from aoe_runner.common.proc import run_bounded
from aoe_runner.common.quantities import ascii_digits
from aoe_runner.preflight.cann import AoeIni, CannEnvironment, cann_environment, find_aoe_ini
from aoe_runner.preflight.history import HistoryUse, measure_history
from aoe_runner.preflight.npu_smi import ListedNpu, Npus, NpuSmiTable, parse_npu_smi, series_of, soc_of

__all__ = ["AoeIni", "CannEnvironment", "DiskSpace", "HostFacts", "ListedNpu", "Npus", "PathState", "gather_facts"]

SCHEMA_VERSION = 1
AOE_VARIABLES = (
    "AOE_MODE",
    "TUNE_BANK_PATH",
    "TE_PARALLEL_COMPILER",
    "REPEAT_TUNE",
    "ASCEND_DEVICE_ID",
    "ASCEND_WORK_PATH",
    "ASCEND_CACHE_PATH",
)
CANN_VARIABLES = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH")
PROFILING_VARIABLES = ("PROFILING_MODE", "PROFILING_OPTIONS", "MS_PROFILER_OPTIONS")
MULTI_DEVICE_VARIABLES = ("RANK_SIZE", "RANK_TABLE_FILE", "WORLD_SIZE")
MEMORY_VARIABLES = ("GE_USE_STATIC_MEMORY",)
NPU_SMI_TIMEOUT_S = 2.0


@dataclass(kw_only=True)
class DiskSpace:
    __pydantic_config__ = FIELD_DOCSTRINGS

    role: Literal["home", "work", "bank"]
    path: str
    """The directory the role names."""
    measured_at: str | None
    """The nearest existing directory, whose filesystem was measured."""
    free_bytes: int | None


@dataclass(kw_only=True)
class PathState:
    """A directory an AOE variable names, as this host's user sees it."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    variable: str
    written: str
    path: str
    """Resolved against the working directory."""
    exists: bool
    is_dir: bool
    access: str
    """Which of r, w, x this user has, e.g. 'rwx'."""
    nearest_existing: str | None
    """When missing: the nearest existing parent directory."""
    nearest_writable: bool
    """Whether this user can create entries in nearest_existing."""


@dataclass(kw_only=True)
class HostFacts:
    """One host, as measured by `aoe-runner preflight`."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    schema_version: int = SCHEMA_VERSION
    gathered_at: datetime
    hostname: str
    user: str
    python: str
    home: str
    working_directory: str
    logical_cpus: int
    affinity_cpus: int | None
    """CPUs this process may run on; None where the OS cannot say."""
    available_memory_bytes: int
    disks: list[DiskSpace]
    environment: dict[str, str]
    """The AOE, CANN, profiling, multi-device and static-memory variables that are set."""
    cann: CannEnvironment
    aoe_ini: AoeIni
    npus: Npus
    soc: str | None
    lspci: str | None
    """Path of lspci, when on PATH."""
    paths: list[PathState]
    """TUNE_BANK_PATH and ASCEND_WORK_PATH, when set."""
    device_lock_holder: LockHolder | None
    """The run tuning the device now, if any."""
    device_lock_problem: str | None = None
    """Why the device lock cannot be used, if so."""
    history: HistoryUse | None = None
    """aoe-runner's own history: what it holds and the next run adds."""
    sources: dict[str, str]
    """Where each fact came from."""

    def disk(self, role: str) -> DiskSpace | None:
        return next((disk for disk in self.disks if disk.role == role), None)

    def path_state(self, variable: str) -> PathState | None:
        return next((state for state in self.paths if state.variable == variable), None)


def gather_facts(
    env: Mapping[str, str] | None = None,
    aoe_ini: Path | None = None,
    soc: str | None = None,
    count_history: bool = True,
) -> HostFacts:
    """Measure this host, as a child started with `env` (default: this process's environment) would see it.

    count_history False leaves out what aoe-runner's history holds (held_bytes None): a figure for people, which
    costs a listing of the whole history, so `tune` and `verify` do not wait for it before their scripts start.
    """
    env = dict(os.environ if env is None else env)
    home = Path(env.get("HOME") or Path.home())
    cwd = Path.cwd()
    sources: dict[str, str] = {
        "logical_cpus": "os.cpu_count()",
        "affinity_cpus": "os.sched_getaffinity(0)",
        "disks": "shutil.disk_usage() of the nearest existing directory",
        "device_lock_holder": "aoe-runner's device lock file",
        "paths": "os.access() as this user",
        "history": "a listing of the aoe-runner home and the bank (sizes only, nothing read)",
    }
    available_memory, sources["available_memory_bytes"] = _available_memory()
    roots = [Path("/usr/local/Ascend"), home / "Ascend"]
    cann = cann_environment(env, roots)
    npus, table = _npus(env)
    soc_name, sources["soc"] = _soc(soc, npus, table)
    ini = find_aoe_ini(aoe_ini, env, roots)
    sources["aoe_ini"] = "--aoe-ini" if aoe_ini else "the install's aoe.ini, then the documented locations"
    return HostFacts(
        gathered_at=datetime.now(timezone.utc),
        hostname=platform.node(),  # uname's nodename, what socket.gethostname() returns
        user=_user(),
        python=platform.python_version(),
        home=str(home),
        working_directory=str(cwd),
        logical_cpus=os.cpu_count() or 1,
        affinity_cpus=_affinity(),
        available_memory_bytes=available_memory,
        disks=_disks(env, home, cwd, soc_name),
        environment={name: env[name] for name in _RELEVANT if name in env},
        cann=cann,
        aoe_ini=ini,
        npus=npus,
        soc=soc_name,
        lspci=shutil.which("lspci", path=env.get("PATH")),
        paths=[_path_state(name, env[name], cwd) for name in ("TUNE_BANK_PATH", "ASCEND_WORK_PATH") if env.get(name)],
        **_device_lock(env),
        history=_history(env, home, cwd, soc_name, count_history),
        sources=sources,
    )


_RELEVANT = AOE_VARIABLES + CANN_VARIABLES + PROFILING_VARIABLES + MULTI_DEVICE_VARIABLES + MEMORY_VARIABLES


def _available_memory() -> tuple[int, str]:
    """Memory available to start new work without swapping, and where the figure came from: the kernel's own
    estimate, MemAvailable in /proc/meminfo, which is what psutil reports on Linux, read without importing psutil
    (a fifth of preflight's start-up); psutil on a host without it (another OS, a kernel before 3.14)."""
    try:
        with open("/proc/meminfo", "rb") as meminfo:
            for line in meminfo:
                if line.startswith(b"MemAvailable:"):
                    number, unit = line.split()[1:3]
                    if unit == b"kB":
                        return int(number) * 1024, "MemAvailable in /proc/meminfo"
    except (OSError, ValueError):
        pass
    import psutil

    return psutil.virtual_memory().available, "psutil.virtual_memory().available"


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def _affinity() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return None


def resolve_against(path: str, cwd: str | Path) -> Path:
    """A path as AOE reads it: absolute, or relative to the working directory."""
    return Path(os.path.normpath(Path(cwd) / os.path.expanduser(path)))


def default_bank(env: Mapping[str, str], home: str | Path, soc: str | None, mode: Literal["op", "subgraph"]) -> tuple[Path, str]:
    """Where AOE puts the bank when TUNE_BANK_PATH is unset, and which rule chose it."""
    soc_part = soc or "<soc_version>"
    if env.get("ASCEND_CACHE_PATH"):
        base = Path(env["ASCEND_CACHE_PATH"]) / "aoe_data"
        return (base / soc_part if mode == "op" else base), "ASCEND_CACHE_PATH is set"
    kind = "op" if mode == "op" else "graph"
    return Path(home) / "Ascend/latest/data/aoe/custom" / kind / soc_part, "neither TUNE_BANK_PATH nor ASCEND_CACHE_PATH is set"


def _path_state(variable: str, written: str, cwd: Path) -> PathState:
    path = resolve_against(written, cwd)
    existing = nearest_existing(path)
    access = "".join(letter for letter, flag in (("r", os.R_OK), ("w", os.W_OK), ("x", os.X_OK)) if os.access(path, flag))
    return PathState(
        variable=variable,
        written=written,
        path=str(path),
        exists=path.exists(),
        is_dir=path.is_dir(),
        access=access,
        nearest_existing=str(existing) if existing else None,
        nearest_writable=existing is not None and os.access(existing, os.W_OK | os.X_OK),
    )


def _disks(env: Mapping[str, str], home: Path, cwd: Path, soc: str | None) -> list[DiskSpace]:
    work = resolve_against(env["ASCEND_WORK_PATH"], cwd) if env.get("ASCEND_WORK_PATH") else cwd
    if env.get("TUNE_BANK_PATH"):
        bank = resolve_against(env["TUNE_BANK_PATH"], cwd)
    else:
        bank, _ = default_bank(env, home, soc, "op")
    return [_disk_space("home", home), _disk_space("work", work), _disk_space("bank", bank)]


def _history(env: Mapping[str, str], home: Path, cwd: Path, soc: str | None, count_held: bool) -> HistoryUse:
    configured = env.get(HOME_VARIABLE)
    runner = Path(configured).expanduser() if configured else runner_home()
    bank = resolve_against(env["TUNE_BANK_PATH"], cwd) if env.get("TUNE_BANK_PATH") else default_bank(env, home, soc, "op")[0]
    return measure_history(runner, bank.parent if bank.name == "<soc_version>" else bank, home, count_held)


def _disk_space(role: Literal["home", "work", "bank"], path: Path) -> DiskSpace:
    existing = nearest_existing(path)
    try:
        free = shutil.disk_usage(existing).free if existing else None
    except OSError:
        free = None
    return DiskSpace(role=role, path=str(path), measured_at=str(existing) if existing else None, free_bytes=free)


def nearest_existing(path: Path) -> Path | None:
    for candidate in (path, *path.parents):
        if candidate.is_dir():
            return candidate
    return None


def _npus(env: Mapping[str, str]) -> tuple[Npus, NpuSmiTable | None]:
    devices = sorted(
        int(match.group(1)) for path in Path("/dev").glob("davinci*") if (match := re.fullmatch(r"davinci(\d+)", path.name))
    )
    npu_smi = shutil.which("npu-smi", path=env.get("PATH"))
    if not npu_smi:
        return Npus(devices=devices, npu_smi=None), None
    completed = run_bounded([npu_smi, "info"], NPU_SMI_TIMEOUT_S)
    if not completed.ok:
        error = completed.error or f"npu-smi info exited with {completed.exit_code}"
        return Npus(devices=devices, npu_smi=npu_smi, npu_smi_error=error), None
    table = parse_npu_smi(completed.stdout)
    npus = Npus(
        devices=devices,
        npu_smi=npu_smi,
        chips=table.chip_names,
        listed=table.listed,
        layout=table.layout,
        series=series_of(table),
        npu_smi_version=table.version,
    )
    return npus, table


def _soc(explicit: str | None, npus: Npus, table: NpuSmiTable | None) -> tuple[str | None, str]:
    """--soc, else the name npu-smi prints, when that names the exact SoC."""
    if explicit:
        return explicit, "--soc"
    if table is not None:
        return soc_of(table)
    return None, f"unknown: no --soc, and {npus.npu_smi_error or 'npu-smi not found'}"


def _device_lock(env: Mapping[str, str]) -> dict[str, Any]:
    """Who holds the device's lock, or why the lock cannot be trusted (a FIFO in its place, a foreign directory)."""
    device = env.get("ASCEND_DEVICE_ID", "0").strip()
    if not ascii_digits(device):
        return {"device_lock_holder": None}
    try:
        return {"device_lock_holder": current_holder(int(device))}
    except LockUnusable as error:
        return {"device_lock_holder": None, "device_lock_problem": error.message}
