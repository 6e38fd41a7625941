"""Each tuning scenario's own formulas (AOE.md §2, §6): AOE inside training, a PyTorch dump tuned by the offline
CLI, and a model file tuned by it; numbers at their boundaries, and the checks a scenario does not apply skipped."""

from __future__ import annotations

import pytest

from aoe_runner.errors import UsageError
from aoe_runner.frameworks.kinds import Framework, Scenario
from aoe_runner.preflight.checks import Status
from aoe_runner.preflight.checks.host import check_lspci, check_multi_device, check_profiling, check_static_memory
from aoe_runner.preflight.checks.resources import check_cpus, check_disk_home, check_memory, check_workspace_disk
from aoe_runner.preflight.checks.variables import check_aoe_mode
from aoe_runner.preflight.plan import plan_for
from tests.preflight.hosts import GIB, make_facts

PYTORCH = plan_for("op", framework=Framework.PYTORCH)
MODEL_OP = plan_for("op", model_file_bytes=500 * 2**20)
MODEL_SUBGRAPH = plan_for("subgraph", model_file_bytes=500 * 2**20)


def test_the_scenario_follows_the_framework_and_the_model() -> None:
    assert plan_for("op").scenario is Scenario.TRAINING
    assert plan_for("op", framework=Framework.MINDSPORE).scenario is Scenario.TRAINING
    assert PYTORCH.scenario is Scenario.PYTORCH
    assert MODEL_OP.scenario is Scenario.OFFLINE


@pytest.mark.parametrize(("cpus", "status"), [(82, Status.FAIL), (83, Status.PASS)])
def test_pytorch_op_cpus_use_58_in_place_of_50_and_add_one(cpus: int, status: Status) -> None:
    result = check_cpus(make_facts(cpus=cpus), PYTORCH)  # 8 + 8 + 1 + 8 + 58
    assert (result.status, result.required) == (status, ">= 83")
    assert result.formula == "TE_PARALLEL_COMPILER + TUNING_PARALLEL_NUM + 1 + min(cores/2, 8) + 58 = 8 + 8 + 1 + 8 + 58 = 83"
    assert result.title == "host CPUs (op tuning, pytorch)"


@pytest.mark.parametrize(("cpus", "status"), [(74, Status.FAIL), (75, Status.PASS)])
def test_a_model_files_op_cpus_are_the_offline_clis(cpus: int, status: Status) -> None:
    result = check_cpus(make_facts(cpus=cpus), MODEL_OP)  # 8 + 8 + 1 + 8 + 50
    assert (result.status, result.required) == (status, ">= 75")


def test_a_model_files_subgraph_cpus_add_one_to_the_training_formula() -> None:
    result = check_cpus(make_facts(cpus=24), MODEL_SUBGRAPH)
    assert (result.status, result.required) == (Status.FAIL, ">= 25")
    assert result.formula == "2 x TUNING_PARALLEL_NUM + TE_PARALLEL_COMPILER + 1 = 2 x 8 + 8 + 1 = 25"
    assert "TE_PARALLEL_COMPILER + TUNING_PARALLEL_NUM" not in (result.fix or "")  # subgraph: the other sum
    assert "2 x TUNING_PARALLEL_NUM + TE_PARALLEL_COMPILER to 23 (now 24)" in (result.fix or "")


@pytest.mark.parametrize(("memory_gib", "status"), [(31.9, Status.FAIL), (32, Status.PASS)])
def test_the_offline_cli_needs_32_gib_whatever_the_model(memory_gib: float, status: Status) -> None:
    for plan in (PYTORCH, MODEL_OP):
        result = check_memory(make_facts(memory_gib=memory_gib), plan)
        assert (result.status, result.required) == (status, ">= 32.0 GiB")


def test_the_workspace_of_a_model_file_is_counted_in_the_work_directory() -> None:
    result = check_workspace_disk(make_facts(home_free_gib=9), MODEL_OP)  # 20 x 500 MiB = 9.8 GiB
    assert (result.status, result.required) == (Status.FAIL, ">= 9.8 GiB")
    assert "20 x the model's 500.0 MiB" in (result.formula or "")
    assert check_workspace_disk(make_facts(home_free_gib=10), MODEL_OP).status is Status.PASS
    assert check_workspace_disk(make_facts(home_free_gib=1), plan_for("op")).status is Status.SKIP
    assert check_disk_home(make_facts(home_free_gib=20), MODEL_OP).status is Status.PASS  # the home's own 20 GiB only


def test_training_only_checks_are_skipped_for_a_model_file_and_say_why() -> None:
    facts = make_facts(environment={"PROFILING_MODE": "true", "RANK_SIZE": "8", "GE_USE_STATIC_MEMORY": "1", "AOE_MODE": "7"})
    for check in (check_profiling, check_multi_device, check_static_memory):
        assert check(facts, plan_for("op")).status is Status.FAIL
        skipped = check(facts, MODEL_OP)
        assert (skipped.status, skipped.fix) == (Status.SKIP, "applies to training scripts")
    assert check_aoe_mode(facts, MODEL_OP).status is Status.SKIP
    assert check_multi_device(facts, PYTORCH).status is Status.FAIL  # only a single-device script dumps graphs


def test_lspci_is_asked_of_mindspore_alone() -> None:
    facts = make_facts(lspci=None)
    assert check_lspci(facts, plan_for("op", framework=Framework.MINDSPORE)).status is Status.WARN
    assert check_lspci(facts, plan_for("op")).status is Status.WARN  # framework unknown: it may be MindSpore
    assert check_lspci(facts, plan_for("op", framework=Framework.TF)).status is Status.SKIP
    assert check_lspci(facts, PYTORCH).status is Status.SKIP


def test_pytorch_has_no_subgraph_plan() -> None:
    with pytest.raises(UsageError, match="PyTorch has operator tuning only"):
        plan_for("subgraph", framework=Framework.PYTORCH)


def test_the_memory_formula_for_training_is_unchanged() -> None:
    plan = plan_for("op", model_memory="4GiB", framework=Framework.MINDSPORE)
    result = check_memory(make_facts(memory_gib=24), plan)
    assert result.required == f">= {32 * GIB / GIB:.1f} GiB"  # 4 GiB x TUNING_PARALLEL_NUM 8


def test_the_list_of_check_ids_is_every_checks_id() -> None:
    from aoe_runner.preflight.checks import CHECK_IDS, run_checks

    assert sorted(CHECK_IDS) == sorted(check.id for check in run_checks(make_facts(), plan_for("op")))
