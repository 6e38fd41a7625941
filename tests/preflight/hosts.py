"""Hosts we do not have: facts built in code (unit tests), saved as files (CLI tests), or laid out on disk
(a CANN install copied from tests/data/cann/ and a fake `npu-smi` that prints a table from tests/data/npu-smi/).
"""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from aoe_runner.preflight.facts import AoeIni, CannEnvironment, DiskSpace, HostFacts, Npus
from tests.conftest import DATA

GIB = 2**30
CANN_LAYOUTS = DATA / "cann"
NPU_SMI_OUTPUTS = DATA / "npu-smi"


def home_with_install(tmp_path: Path, layout: str) -> Path:
    """A home whose ~/Ascend is a copy of tests/data/cann/<layout>/Ascend, links kept as links."""
    home = tmp_path / "home"
    shutil.copytree(CANN_LAYOUTS / layout, home, symlinks=True)
    return home


def fake_npu_smi(bin_dir: Path, output: str) -> Path:
    """An `npu-smi` executable that prints tests/data/npu-smi/<output>.txt, as `npu-smi info` would."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "npu-smi"
    script.write_text(f"#!/bin/sh\nexec /bin/cat '{NPU_SMI_OUTPUTS / output}.txt'\n")
    script.chmod(0o755)
    return script


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
