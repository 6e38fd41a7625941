"""Host facts for hosts we do not have, built in code (unit tests) or saved as files (CLI tests)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from aoe_runner.preflight.facts import AoeIni, CannEnvironment, DiskSpace, HostFacts, Npus

GIB = 2**30


def make_facts(
    cpus: int = 2,
    affinity: int | None = None,
    memory_gib: float = 24,
    home_free_gib: float = 100,
    npus: int = 0,
    environment: dict[str, str] | None = None,
    tuning_parallel_num: str | None = None,
    soc: str | None = None,
    **overrides: Any,
) -> HostFacts:
    ini_path = "/usr/local/Ascend/latest/tools/aoe/conf/aoe.ini" if tuning_parallel_num is not None else None
    fields: dict[str, Any] = {
        "gathered_at": datetime(2026, 11, 21, 12, 0, tzinfo=timezone.utc),
        "hostname": "testhost",
        "user": "tuner",
        "python": "3.11.7",
        "home": "/home/tuner",
        "working_directory": "/home/tuner/work",
        "logical_cpus": cpus,
        "affinity_cpus": cpus if affinity is None else affinity,
        "available_memory_bytes": int(memory_gib * GIB),
        "disks": [DiskSpace(role="home", path="/home/tuner", measured_at="/home/tuner", free_bytes=int(home_free_gib * GIB))],
        "environment": environment or {},
        "cann": CannEnvironment(toolkit_home=None, set_env_scripts=[], version=None, version_file=None),
        "aoe_ini": AoeIni(path=ini_path, searched=[ini_path or "/nowhere/aoe.ini"], tuning_parallel_num=tuning_parallel_num),
        "npus": Npus(devices=list(range(npus)), npu_smi=None),
        "soc": soc,
        "lspci": "/usr/bin/lspci",
        "device_lock_holder": None,
        "paths": [],
        "sources": {"logical_cpus": "os.cpu_count()"},
    }
    fields.update(overrides)
    return HostFacts(**fields)
