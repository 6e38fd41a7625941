"""The integer settings the formulas use, with where each value came from."""

from __future__ import annotations

from dataclasses import dataclass

from aoe_runner.common.quantities import ascii_whole
from aoe_runner.preflight.facts import HostFacts

DEFAULT_TE_PARALLEL_COMPILER = 8

DEFAULT_TUNING_PARALLEL_NUM = 8
DEFAULT_RUN_LOOP = 10


@dataclass(frozen=True)
class Setting:
    """An integer setting with where it came from; value None when what is written is not a number."""

    name: str
    value: int | None
    origin: str  # e.g. "TE_PARALLEL_COMPILER=8 (default: unset)"
    written: str | None  # the text as the user wrote it


def te_parallel_compiler(facts: HostFacts) -> Setting:
    written = facts.environment.get("TE_PARALLEL_COMPILER")
    return _setting("TE_PARALLEL_COMPILER", written, DEFAULT_TE_PARALLEL_COMPILER, "environment", "default: unset")


def tuning_parallel_num(facts: HostFacts) -> Setting:
    return _ini_setting(facts, "TUNING_PARALLEL_NUM", facts.aoe_ini.tuning_parallel_num, DEFAULT_TUNING_PARALLEL_NUM)


def run_loop(facts: HostFacts) -> Setting:
    return _ini_setting(facts, "RUN_LOOP", facts.aoe_ini.run_loop, DEFAULT_RUN_LOOP)


def _ini_setting(facts: HostFacts, name: str, written: str | None, default: int) -> Setting:
    path = facts.aoe_ini.path
    why = "default: aoe.ini not found" if path is None else f"default: not set in {path}"
    return _setting(name, written, default, path or "", why)


def _setting(name: str, written: str | None, default: int, where: str, default_reason: str) -> Setting:
    if written is None:
        return Setting(name, default, f"{name}={default} ({default_reason})", None)
    value = ascii_whole(written)
    return Setting(name, value, f"{name}={written} ({where})", written)


def cores_origin(facts: HostFacts) -> str:
    return f"cores={facts.logical_cpus} ({facts.sources.get('logical_cpus', 'measured')})"
