"""Every formula on hosts from saved facts: small, exact boundary, large multi-NPU; numbers, not just status."""

from __future__ import annotations

from dataclasses import replace

import pytest

from aoe_runner.preflight.checks import Status, run_checks
from aoe_runner.preflight.checks.host import (
    check_cpu_binding,
    check_device_free,
    check_multi_device,
    check_profiling,
    check_static_memory,
)
from aoe_runner.preflight.checks.resources import (
    check_cpus,
    check_disk_home,
    check_memory,
    check_run_loop,
    check_te_parallel_compiler,
    check_tuning_parallel_num,
)
from aoe_runner.preflight.checks.variables import (
    check_aoe_mode,
    check_bank_path,
    check_device_id,
    check_mode_supported,
    check_repeat_tune,
    check_work_path,
)
from aoe_runner.preflight.facts import AoeIni, Npus, PathState
from aoe_runner.preflight.history import HistoryUse
from aoe_runner.preflight.plan import Plan, TuneMode
from tests.preflight.hosts import GIB, make_facts

OP = Plan(mode=TuneMode.OP, mode_source="--mode")
SUBGRAPH = Plan(mode=TuneMode.SUBGRAPH, mode_source="--mode")


def test_op_cpus_on_a_small_host_need_67_with_the_defaults() -> None:
    result = check_cpus(make_facts(cpus=2), OP)
    assert result.status is Status.FAIL
    assert result.required == ">= 67"  # 1 x (8 + 8 + min(2/2, 8) + 50)
    assert result.formula.endswith("= 1 x (8 + 8 + 1 + 50) = 67")
    assert "TE_PARALLEL_COMPILER=8 (default: unset)" in result.sources
    assert "TUNING_PARALLEL_NUM=8 (default: aoe.ini not found)" in result.sources


@pytest.mark.parametrize(("cpus", "status"), [(73, Status.FAIL), (74, Status.PASS)])
def test_op_cpus_at_the_exact_boundary(cpus: int, status: Status) -> None:
    # min(cores/2, 8) is 8 from 16 cores up: 8 + 8 + 8 + 50 = 74
    result = check_cpus(make_facts(cpus=cpus), OP)
    assert (result.status, result.required) == (status, ">= 74")


def test_op_cpus_multiply_by_the_number_of_processes_and_round_half_cores_up() -> None:
    result = check_cpus(make_facts(cpus=3), replace(OP, procs=2))
    assert result.formula.endswith("= 2 x (8 + 8 + 1.5 + 50) = 135")
    assert result.required == ">= 135"


def test_subgraph_cpus_on_a_192_core_server_with_8_npus() -> None:
    facts = make_facts(cpus=192, npus=8, environment={"TE_PARALLEL_COMPILER": "16"}, tuning_parallel_num="24")
    result = check_cpus(facts, replace(SUBGRAPH, procs=3))
    assert result.status is Status.PASS
    assert result.formula == "P x (2 x TUNING_PARALLEL_NUM + TE_PARALLEL_COMPILER) = 3 x (2 x 24 + 16) = 192"
    assert "TUNING_PARALLEL_NUM=24 (/usr/local/Ascend/latest/tools/aoe/conf/aoe.ini)" in result.sources


@pytest.mark.parametrize(
    ("written", "status", "required"),
    [("19", Status.PASS, "integer in 1..32 and <= 19"), ("20", Status.FAIL, "integer in 1..32 and <= 19")],
)
def test_te_parallel_compiler_per_npu_limit_on_the_big_server(written: str, status: Status, required: str) -> None:
    facts = make_facts(cpus=192, npus=8, environment={"TE_PARALLEL_COMPILER": written})  # 192 x 0.8 / 8 = 19.2
    result = check_te_parallel_compiler(facts, OP)
    assert (result.status, result.required) == (status, required)
    assert "192 x 0.8 / 8 = 19.2" in result.formula


@pytest.mark.parametrize("written", ["abc", "0", "33", "-1", "8.5", "１", "1_6", "²"])
def test_te_parallel_compiler_outside_1_to_32_fails_and_cpu_formula_skips_whatever_is_written(written: str) -> None:
    """0, 33 and -1 are refused by AOE as abc is: none of them goes into the CPU formula. Nor are numbers only
    Python reads: full-width digits (a keystroke away in a Chinese input method), underscores, superscripts."""
    facts = make_facts(cpus=192, npus=8, environment={"TE_PARALLEL_COMPILER": written})
    assert check_te_parallel_compiler(facts, OP).status is Status.FAIL
    cpus = check_cpus(facts, OP)
    assert cpus.status is Status.SKIP and cpus.fix == "fix TE_PARALLEL_COMPILER first (an integer from 1 to 32)"
    assert cpus.formula is None


def test_te_parallel_compiler_without_npus_counts_one() -> None:
    result = check_te_parallel_compiler(make_facts(cpus=10), OP)
    assert result.status is Status.PASS  # 8 <= 10 x 0.8 / 1
    assert any("counted as 1" in source for source in result.sources)


@pytest.mark.parametrize(("available", "status"), [(96 * GIB, Status.PASS), (96 * GIB - 1, Status.FAIL)])  # 12 GiB x 8
def test_memory_is_model_memory_times_tuning_parallel_num_at_the_boundary(available: int, status: Status) -> None:
    facts = make_facts(available_memory_bytes=available)
    result = check_memory(facts, replace(OP, model_memory_bytes=12 * GIB))
    assert (result.status, result.required) == (status, ">= 96.0 GiB")
    assert "x TUNING_PARALLEL_NUM 8" in result.formula


def test_memory_is_skipped_with_a_hint_when_the_model_memory_is_unknown() -> None:
    result = check_memory(make_facts(), OP)
    assert result.status is Status.SKIP and "--model-memory" in result.fix


@pytest.mark.parametrize(("free_gib", "status"), [(20, Status.PASS), (19.99, Status.FAIL)])
def test_home_disk_needs_20_gib(free_gib: float, status: Status) -> None:
    result = check_disk_home(make_facts(home_free_gib=free_gib), OP)
    assert result.status is status
    if status is Status.FAIL:
        assert result.fix.startswith("free 10.2 MiB in /home/tuner")


def history(held_gib: float, next_gib: float, same_filesystem: bool = True, free_gib: float | None = None) -> HistoryUse:
    return HistoryUse(
        home="/home/tuner/.local/share/aoe-runner",
        held_bytes=int(held_gib * GIB),
        next_run_bytes=int(next_gib * GIB),
        shares_home_filesystem=same_filesystem,
        free_bytes=None if free_gib is None else int(free_gib * GIB),
    )


def test_what_aoe_runner_will_write_counts_toward_the_home_disk() -> None:
    facts = replace(make_facts(home_free_gib=21), history=history(held_gib=5, next_gib=2))

    result = check_disk_home(facts, OP)

    assert result.status is Status.FAIL and result.required == ">= 22.0 GiB"
    assert result.observed == "21.0 GiB; aoe-runner's history holds 5.0 GiB"
    assert "+ 2.0 GiB that aoe-runner will write" in result.formula
    assert "aoe-runner runs prune --keep N --yes" in result.fix


def test_a_history_on_another_filesystem_must_hold_the_next_run_itself() -> None:
    roomy = replace(make_facts(home_free_gib=30), history=history(1, 2, same_filesystem=False, free_gib=1))
    result = check_disk_home(roomy, OP)
    assert result.status is Status.FAIL and result.required == ">= 20.0 GiB"
    assert "has 1.0 GiB free, the next run writes up to 2.0 GiB" in result.fix


@pytest.mark.parametrize(("written", "status"), [("1", Status.PASS), ("65", Status.FAIL), ("many", Status.FAIL)])
def test_tuning_parallel_num_range(written: str, status: Status) -> None:
    facts = make_facts(cpus=192, tuning_parallel_num=written)
    assert check_tuning_parallel_num(facts, OP).status is status


def test_tuning_parallel_num_above_two_thirds_of_the_cores_is_a_warning() -> None:
    result = check_tuning_parallel_num(make_facts(cpus=9, tuning_parallel_num="7"), OP)
    assert (result.status, result.fix) == (Status.WARN, "set TUNING_PARALLEL_NUM=6 in aoe.ini")


@pytest.mark.parametrize(
    ("aoe_mode", "plan", "status", "fix_part"),
    [
        (None, OP, Status.PASS, None),
        ("2", OP, Status.PASS, None),
        ("1", OP, Status.WARN, "disagrees"),
        ("4", OP, Status.FAIL, "gradient tuning"),
        ("7", OP, Status.FAIL, "AOE_MODE=2"),
    ],
)
def test_aoe_mode(aoe_mode: str | None, plan: Plan, status: Status, fix_part: str | None) -> None:
    facts = make_facts(environment={"AOE_MODE": aoe_mode} if aoe_mode else {})
    result = check_aoe_mode(facts, plan)
    assert result.status is status
    assert fix_part is None or fix_part in result.fix


@pytest.mark.parametrize(
    ("soc", "plan", "status"),
    [
        ("Ascend910B3", SUBGRAPH, Status.FAIL),
        ("Ascend910_9382", SUBGRAPH, Status.FAIL),
        ("Ascend910B3", OP, Status.PASS),
        ("Ascend910A", SUBGRAPH, Status.PASS),
        (None, SUBGRAPH, Status.SKIP),
    ],
)
def test_subgraph_mode_is_refused_on_atlas_a2_and_a3(soc: str | None, plan: Plan, status: Status) -> None:
    assert check_mode_supported(make_facts(soc=soc), plan).status is status


@pytest.mark.parametrize(
    ("series", "plan", "status"),
    [("Atlas A3", SUBGRAPH, Status.FAIL), ("Atlas A2", SUBGRAPH, Status.FAIL), ("Atlas A3", OP, Status.PASS)],
)
def test_the_npu_smi_series_decides_when_no_soc_is_named(series: str, plan: Plan, status: Status) -> None:
    npus = Npus(devices=[0], npu_smi="/usr/bin/npu-smi", chips=["Ascend910"], layout="Chip Phy-ID", series=series)
    result = check_mode_supported(replace(make_facts(soc=None), npus=npus), plan)
    assert result.status is status
    assert result.observed == f"{plan.mode.value} on {series}, exact SoC unknown"


def _path(variable: str, **state: object) -> PathState:
    base = {"variable": variable, "written": "bank", "path": "/home/tuner/work/bank", "exists": True, "is_dir": True,
            "access": "rwx", "nearest_existing": "/home/tuner/work/bank", "nearest_writable": True}  # fmt: skip
    return PathState(**{**base, **state})  # type: ignore[arg-type]


def test_bank_path_relative_is_resolved_and_shows_where_the_op_bank_lands() -> None:
    facts = make_facts(soc="Ascend910B3", environment={"TUNE_BANK_PATH": "bank"}, paths=[_path("TUNE_BANK_PATH")])
    result = check_bank_path(facts, OP)
    assert result.status is Status.PASS
    assert result.observed == "bank -> /home/tuner/work/bank; op bank lands in /home/tuner/work/bank/Ascend910B3"


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ({"exists": False, "is_dir": False, "access": ""}, "does not exist"),
        ({"is_dir": False}, "is not a directory"),
        ({"access": "rx"}, "only 'rx' of rwx"),
    ],  # fmt: skip
)
def test_bank_path_problems_fail(state: dict, problem: str) -> None:  # type: ignore[type-arg]
    facts = make_facts(environment={"TUNE_BANK_PATH": "bank"}, paths=[_path("TUNE_BANK_PATH", **state)])
    result = check_bank_path(facts, OP)
    assert result.status is Status.FAIL and problem in result.observed


def test_unset_bank_names_aoes_default_by_priority() -> None:
    with_cache = make_facts(soc="Ascend310P3", environment={"ASCEND_CACHE_PATH": "/cache"})
    assert check_bank_path(with_cache, OP).observed == "unset: AOE will use /cache/aoe_data/Ascend310P3"
    assert check_bank_path(with_cache, SUBGRAPH).observed == "unset: AOE will use /cache/aoe_data"
    plain = make_facts(soc="Ascend310P3")
    assert (
        check_bank_path(plain, SUBGRAPH).observed
        == "unset: AOE will use /home/tuner/Ascend/latest/data/aoe/custom/graph/Ascend310P3"
    )


@pytest.mark.parametrize(
    ("written", "status"), [(None, Status.PASS), ("True", Status.PASS), ("False", Status.PASS), ("yes", Status.FAIL)]
)
def test_repeat_tune(written: str | None, status: Status) -> None:
    assert check_repeat_tune(make_facts(environment={"REPEAT_TUNE": written} if written else {}), OP).status is status


@pytest.mark.parametrize(
    ("written", "npus", "status"), [("3", 8, Status.PASS), ("8", 8, Status.FAIL), ("x", 8, Status.FAIL), ("0", 0, Status.SKIP)]
)
def test_device_id_within_the_devices_present(written: str, npus: int, status: Status) -> None:
    assert check_device_id(make_facts(npus=npus, environment={"ASCEND_DEVICE_ID": written}), OP).status is status


def test_work_path_missing_but_creatable_passes_and_unwritable_parent_fails() -> None:
    creatable = _path("ASCEND_WORK_PATH", exists=False, is_dir=False, access="", nearest_existing="/home/tuner")
    assert check_work_path(make_facts(paths=[creatable]), OP).status is Status.PASS
    blocked = replace(creatable, nearest_existing="/", nearest_writable=False)
    assert check_work_path(make_facts(paths=[blocked]), OP).status is Status.FAIL


def test_cpu_binding_multi_device_and_profiling() -> None:
    assert check_cpu_binding(make_facts(cpus=8, affinity=4), OP).status is Status.FAIL
    assert check_cpu_binding(make_facts(cpus=8), OP).status is Status.PASS
    assert check_multi_device(make_facts(environment={"RANK_SIZE": "8"}), OP).status is Status.FAIL
    assert check_multi_device(make_facts(environment={"RANK_SIZE": "1", "WORLD_SIZE": "1"}), OP).status is Status.PASS
    assert check_multi_device(make_facts(environment={"RANK_TABLE_FILE": "/r.json"}), OP).status is Status.FAIL
    assert check_profiling(make_facts(environment={"PROFILING_MODE": "true"}), OP).status is Status.FAIL
    assert check_profiling(make_facts(environment={"PROFILING_MODE": "false"}), OP).status is Status.PASS


@pytest.mark.parametrize(
    ("written", "status"),
    [(None, Status.PASS), ("0", Status.PASS), (" 0 ", Status.PASS), ("1", Status.FAIL), ("2", Status.FAIL), ("", Status.FAIL)],
)
def test_static_memory_allocation_must_be_off(written: str | None, status: Status) -> None:
    result = check_static_memory(make_facts(environment={} if written is None else {"GE_USE_STATIC_MEMORY": written}), OP)
    assert result.status is status
    assert result.observed == ("unset (0, dynamic allocation)" if written is None else written)
    assert result.reference and "CANN 6.0.1" in result.reference and "GE_USE_STATIC_MEMORY=0" in result.reference
    assert status is Status.PASS or result.fix == "export GE_USE_STATIC_MEMORY=0 (or unset it) while tuning"


def test_the_single_device_check_cites_the_guide() -> None:
    result = check_multi_device(make_facts(environment={"WORLD_SIZE": "2"}), OP)
    assert result.status is Status.FAIL
    assert result.reference and "不支持多P场景下的调优" in result.reference and "CANN 6.0.1" in result.reference


@pytest.mark.parametrize(
    ("written", "status", "observed"),
    [(None, Status.PASS, "10"), ("1", Status.PASS, "1"), ("2048", Status.PASS, "2048"), ("2049", Status.FAIL, "2049"),
     ("0", Status.FAIL, "0"), ("ten", Status.FAIL, "ten")],
)  # fmt: skip
def test_run_loop_from_aoe_ini(written: str | None, status: Status, observed: str) -> None:
    ini = AoeIni(path="/opt/aoe.ini", searched=["/opt/aoe.ini"], tuning_parallel_num=None, run_loop=written)
    result = check_run_loop(make_facts(aoe_ini=ini), OP)
    assert (result.status, result.observed) == (status, observed)
    assert result.sources == [
        f"RUN_LOOP={written} (/opt/aoe.ini)" if written else "RUN_LOOP=10 (default: not set in /opt/aoe.ini)"
    ]


def test_a_held_device_fails_and_names_the_holder() -> None:
    from aoe_runner.common.devlock import LockHolder

    holder = LockHolder(user="alice", pid=4242, host="h", started_at="2026-11-21T10:00:00", command="aoe-runner tune t.py")
    result = check_device_free(make_facts(device_lock_holder=holder), OP)
    assert result.status is Status.FAIL and "alice" in result.observed and "4242" in result.observed


def test_every_check_gives_observed_required_and_a_fix_when_it_fails() -> None:
    for result in run_checks(make_facts(), OP):
        assert result.observed and result.required
        if result.status in (Status.FAIL, Status.WARN):
            assert result.fix, result.id
