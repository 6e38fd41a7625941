"""Host facts: everything the preflight checks need, measured once, with where each value came from.

Facts are data: they can be saved as JSON on one host and checked on another (`--save-facts`,
`--facts`), which is also how the tests check hosts we do not have.
"""

from __future__ import annotations

import configparser
import getpass
import os
import platform
import re
import shutil
import socket
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

import psutil
from pydantic import BaseModel, Field

from aoe_runner.devlock import LockHolder, current_holder
from aoe_runner.proc import run_bounded

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
NPU_SMI_TIMEOUT_S = 2.0
_SET_ENV_SCRIPTS = ("ascend-toolkit/set_env.sh", "cann/set_env.sh")  # up to CANN 8.0, from 8.5
_AOE_INI_UNDER_ROOT = ("latest/tools/aoe/conf/aoe.ini", "ascend-toolkit/latest/tools/aoe/conf/aoe.ini", "cann/conf/aoe.ini")
_AOE_INI_UNDER_TOOLKIT = ("tools/aoe/conf/aoe.ini", "conf/aoe.ini")
_VERSION_FILES = ("version.cfg", "ascend_toolkit_install.info", "*/ascend_toolkit_install.info", "version.info")
_VERSION_LINE = re.compile(r"^\s*(?:version|\w*running_version)\s*=\s*\[?([0-9][\w.\-]*)", re.IGNORECASE | re.MULTILINE)
_NPU_SMI_CHIP = re.compile(r"^\|\s*(\d+)\s+((?:Ascend)?\d{3}\w*)\s+\|", re.MULTILINE)


class DiskSpace(BaseModel):
    role: Literal["home", "work", "bank"]
    path: str = Field(description="The directory the role names.")
    measured_at: str | None = Field(description="The nearest existing directory, whose filesystem was measured.")
    free_bytes: int | None


class PathState(BaseModel):
    """A directory an AOE variable names, as this host's user sees it."""

    variable: str
    written: str
    path: str = Field(description="Resolved against the working directory.")
    exists: bool
    is_dir: bool
    access: str = Field(description="Which of r, w, x this user has, e.g. 'rwx'.")
    nearest_existing: str | None = Field(description="When missing: the nearest existing parent directory.")
    nearest_writable: bool = Field(description="Whether this user can create entries in nearest_existing.")


class CannEnvironment(BaseModel):
    toolkit_home: str | None = Field(description="ASCEND_TOOLKIT_HOME or ASCEND_HOME_PATH, when set.")
    set_env_scripts: list[str] = Field(description="set_env.sh files found at the documented places.")
    version: str | None
    version_file: str | None
    driver_version: str | None = Field(None, description="From driver/version.info under the Ascend install roots.")


class AoeIni(BaseModel):
    path: str | None
    searched: list[str]
    tuning_parallel_num: str | None = Field(description="TUNING_PARALLEL_NUM as written, when the file sets it.")
    error: str | None = None


class Npus(BaseModel):
    devices: list[int] = Field(description="N of every /dev/davinci<N>.")
    npu_smi: str | None = Field(description="Path of npu-smi, when on PATH.")
    npu_smi_error: str | None = None
    chips: list[str] = Field(default_factory=list, description="Chip names printed by `npu-smi info`.")


class HostFacts(BaseModel):
    """One host, as measured by `aoe-runner preflight`."""

    schema_version: int = SCHEMA_VERSION
    gathered_at: datetime
    hostname: str
    user: str
    python: str
    home: str
    working_directory: str
    logical_cpus: int
    affinity_cpus: int | None = Field(description="CPUs this process may run on; None where the OS cannot say.")
    available_memory_bytes: int
    disks: list[DiskSpace]
    environment: dict[str, str] = Field(description="The AOE, CANN, profiling and multi-device variables that are set.")
    cann: CannEnvironment
    aoe_ini: AoeIni
    npus: Npus
    soc: str | None
    lspci: str | None = Field(description="Path of lspci, when on PATH.")
    paths: list[PathState] = Field(description="TUNE_BANK_PATH and ASCEND_WORK_PATH, when set.")
    device_lock_holder: LockHolder | None = Field(description="The run tuning the device now, if any.")
    sources: dict[str, str] = Field(description="Where each fact came from.")

    def disk(self, role: str) -> DiskSpace | None:
        return next((disk for disk in self.disks if disk.role == role), None)

    def path_state(self, variable: str) -> PathState | None:
        return next((state for state in self.paths if state.variable == variable), None)


def gather_facts(
    env: Mapping[str, str] | None = None,
    aoe_ini: Path | None = None,
    soc: str | None = None,
) -> HostFacts:
    """Measure this host, as a child started with `env` (default: this process's environment) would see it."""
    env = dict(os.environ if env is None else env)
    home = Path(env.get("HOME") or Path.home())
    cwd = Path.cwd()
    sources: dict[str, str] = {
        "logical_cpus": "os.cpu_count()",
        "affinity_cpus": "os.sched_getaffinity(0)",
        "available_memory_bytes": "psutil.virtual_memory().available",
        "disks": "shutil.disk_usage() of the nearest existing directory",
        "device_lock_holder": "aoe-runner's device lock file",
        "paths": "os.access() as this user",
    }
    roots = [Path("/usr/local/Ascend"), home / "Ascend"]
    cann = _cann_environment(env, roots)
    npus = _npus(env)
    soc_name, sources["soc"] = _soc(soc, npus)
    ini = _aoe_ini(aoe_ini, env, roots)
    sources["aoe_ini"] = "--aoe-ini" if aoe_ini else "the documented aoe.ini locations"
    return HostFacts(
        gathered_at=datetime.now(timezone.utc),
        hostname=socket.gethostname(),
        user=_user(),
        python=platform.python_version(),
        home=str(home),
        working_directory=str(cwd),
        logical_cpus=os.cpu_count() or 1,
        affinity_cpus=_affinity(),
        available_memory_bytes=psutil.virtual_memory().available,
        disks=_disks(env, home, cwd, soc_name),
        environment={name: env[name] for name in _RELEVANT if name in env},
        cann=cann,
        aoe_ini=ini,
        npus=npus,
        soc=soc_name,
        lspci=shutil.which("lspci", path=env.get("PATH")),
        paths=[_path_state(name, env[name], cwd) for name in ("TUNE_BANK_PATH", "ASCEND_WORK_PATH") if env.get(name)],
        device_lock_holder=_lock_holder(env),
        sources=sources,
    )


_RELEVANT = AOE_VARIABLES + CANN_VARIABLES + PROFILING_VARIABLES + MULTI_DEVICE_VARIABLES


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


def _cann_environment(env: Mapping[str, str], roots: list[Path]) -> CannEnvironment:
    toolkit_home = env.get("ASCEND_TOOLKIT_HOME") or env.get("ASCEND_HOME_PATH")
    scripts = [str(root / script) for root in roots for script in _SET_ENV_SCRIPTS if (root / script).is_file()]
    places = [Path(toolkit_home)] if toolkit_home else []
    places += [Path(script).parent / "latest" for script in scripts] + [Path(script).parent for script in scripts]
    version, version_file = _cann_version(places)
    driver_version, _ = _cann_version([root / "driver" for root in roots])
    return CannEnvironment(
        toolkit_home=toolkit_home,
        set_env_scripts=scripts,
        version=version,
        version_file=version_file,
        driver_version=driver_version,
    )


def _cann_version(places: list[Path]) -> tuple[str | None, str | None]:
    for place in places:
        for pattern in _VERSION_FILES:
            for candidate in sorted(place.glob(pattern)) if place.is_dir() else ():
                try:
                    match = _VERSION_LINE.search(candidate.read_text(errors="replace"))
                except OSError:
                    continue
                if match:
                    return match.group(1), str(candidate)
    return None, None


def _aoe_ini(explicit: Path | None, env: Mapping[str, str], roots: list[Path]) -> AoeIni:
    if explicit is not None:
        candidates = [explicit]
    else:
        toolkit = [Path(env[name]) for name in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH") if env.get(name)]
        candidates = [base / rel for base in toolkit for rel in _AOE_INI_UNDER_TOOLKIT]
        candidates += [root / rel for root in roots for rel in _AOE_INI_UNDER_ROOT]
    searched = [str(candidate) for candidate in candidates]
    for candidate in candidates:
        if candidate.is_file():
            value, error = read_tuning_parallel_num(candidate)
            return AoeIni(path=str(candidate), searched=searched, tuning_parallel_num=value, error=error)
    error = f"{explicit}: no such file" if explicit is not None else None
    return AoeIni(path=None, searched=searched, tuning_parallel_num=None, error=error)


def read_tuning_parallel_num(path: Path) -> tuple[str | None, str | None]:
    """TUNING_PARALLEL_NUM from an aoe.ini with or without a section header; (value, error)."""
    parser = configparser.ConfigParser(comment_prefixes=("#", ";"), inline_comment_prefixes=("#", ";"), strict=False)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
        parser.read_string(text if text.lstrip().startswith("[") else "[aoe]\n" + text)
    except (OSError, configparser.Error) as error:
        return None, f"{path}: {str(error).splitlines()[0]}"
    for section in parser.sections():
        if parser.has_option(section, "TUNING_PARALLEL_NUM"):
            return parser.get(section, "TUNING_PARALLEL_NUM").strip(), None
    return None, None


def _npus(env: Mapping[str, str]) -> Npus:
    devices = sorted(
        int(match.group(1)) for path in Path("/dev").glob("davinci*") if (match := re.fullmatch(r"davinci(\d+)", path.name))
    )
    npu_smi = shutil.which("npu-smi", path=env.get("PATH"))
    if not npu_smi:
        return Npus(devices=devices, npu_smi=None)
    completed = run_bounded([npu_smi, "info"], NPU_SMI_TIMEOUT_S)
    if not completed.ok:
        error = completed.error or f"npu-smi info exited with {completed.exit_code}"
        return Npus(devices=devices, npu_smi=npu_smi, npu_smi_error=error)
    chips = [name for _, name in _NPU_SMI_CHIP.findall(completed.stdout)]
    return Npus(devices=devices, npu_smi=npu_smi, chips=chips)


def _soc(explicit: str | None, npus: Npus) -> tuple[str | None, str]:
    if explicit:
        return explicit, "--soc"
    if npus.chips:
        chip = npus.chips[0]
        return (chip if chip.startswith("Ascend") else f"Ascend{chip}"), "npu-smi info"
    return None, "unknown: no --soc and no chip name from npu-smi"


def _lock_holder(env: Mapping[str, str]) -> LockHolder | None:
    device = env.get("ASCEND_DEVICE_ID", "0").strip()
    return current_holder(int(device)) if device.isdigit() else None
