"""The CANN install as real hosts lay it out (AOE.md §5): version files, aoe.ini places, 8.1.RC1 and 8.5 trees.

Each test gathers facts from real files: a copy of tests/data/cann/<layout> as ~/Ascend, or one version file
under a toolkit home that ASCEND_TOOLKIT_HOME names.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aoe_runner.preflight.cann import read_aoe_ini
from aoe_runner.preflight.checks import Status, run_checks
from aoe_runner.preflight.checks.resources import check_cpus, check_run_loop, check_tuning_parallel_num
from aoe_runner.preflight.facts import gather_facts
from aoe_runner.preflight.plan import Plan, TuneMode
from tests.preflight.hosts import CANN_LAYOUTS, home_with_install

OP = Plan(mode=TuneMode.OP, mode_source="--mode")
NO_NPU_SMI = "/nonexistent"


def _toolkit_with(tmp_path: Path, relative: str, fixture: Path) -> dict[str, str]:
    toolkit = tmp_path / "toolkit"
    (toolkit / relative).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(fixture, toolkit / relative)
    return {"HOME": str(tmp_path), "PATH": NO_NPU_SMI, "ASCEND_TOOLKIT_HOME": str(toolkit)}


@pytest.mark.parametrize(
    ("fixture", "release", "inner", "key"),
    [
        ("no-header", "8.1.RC1", "7.7.0.1.238", "toolkit_running_version"),
        ("multi-pair-installed", "8.0.RC2", "7.3.0.1.231", "toolkit_installed_version"),
        ("internal-build", "8.0.T63", "7.6.T13.0.B094", "toolkit_running_version"),
        ("toolkit-running-last", "8.1.RC1", "7.7.0.1.238", "toolkit_running_version"),
        ("component-running-only", "8.0.RC2", "7.3.0.1.231", "runtime_running_version"),
    ],
)
def test_version_cfg_shows_the_release_keeps_the_inner_number_and_prefers_the_running_toolkit(
    tmp_path: Path, fixture: str, release: str, inner: str, key: str
) -> None:
    env = _toolkit_with(tmp_path, "version.cfg", CANN_LAYOUTS / "version-cfg" / f"{fixture}.cfg")
    cann = gather_facts(env=env).cann
    assert (cann.version, cann.inner_version, cann.version_key) == (release, inner, key)
    assert cann.describe() == f"{release} (inner {inner})"


@pytest.mark.parametrize("fixture", ["plain", "junk-after-values", "colon-form"])
def test_ascend_toolkit_install_info_in_every_form(tmp_path: Path, fixture: str) -> None:
    info = CANN_LAYOUTS / "install-info" / f"{fixture}.info"
    env = _toolkit_with(tmp_path, "aarch64-linux/ascend_toolkit_install.info", info)
    cann = gather_facts(env=env).cann
    assert (cann.version, cann.inner_version) == ("8.1.RC1", "V100R001C21SPC001B238")
    assert cann.version_file == str(tmp_path / "toolkit/aarch64-linux/ascend_toolkit_install.info")


def test_an_8_1_rc1_install_not_sourced_is_read_through_latest(tmp_path: Path) -> None:
    home = home_with_install(tmp_path, "toolkit-8.1.RC1")
    facts = gather_facts(env={"HOME": str(home), "PATH": NO_NPU_SMI})
    toolkit = home / "Ascend/ascend-toolkit"
    assert facts.cann.set_env_scripts == [str(toolkit / "set_env.sh")]
    assert (facts.cann.version, facts.cann.inner_version) == ("8.1.RC1", "7.7.0.1.238")
    assert facts.cann.version_file == str(toolkit / "latest/version.cfg")
    assert facts.cann.driver_version == "24.1.rc3"
    ini = facts.aoe_ini
    assert ini.path == str(toolkit / "latest/aarch64-linux/conf/aoe.ini")
    assert (ini.tuning_parallel_num, ini.run_loop, ini.work_path, ini.also_found) == ("24", "10", "./", [])
    assert str(home / "Ascend/cann/conf/aoe.ini") in ini.searched  # the 8.5 docs' place is still looked at


def test_the_real_aoe_ini_feeds_the_cpu_formula(tmp_path: Path) -> None:
    home = home_with_install(tmp_path, "toolkit-8.1.RC1")
    toolkit_home = home / "Ascend/ascend-toolkit/latest"  # what set_env.sh exports
    facts = gather_facts(env={"HOME": str(home), "PATH": NO_NPU_SMI, "ASCEND_TOOLKIT_HOME": str(toolkit_home)})
    assert facts.aoe_ini.path == str(toolkit_home / "aarch64-linux/conf/aoe.ini")
    cpus = check_cpus(facts, OP)
    assert cpus.formula is not None and f"(8 + 24 + {min(facts.logical_cpus / 2, 8):g} + 50)" in cpus.formula
    assert f"TUNING_PARALLEL_NUM=24 ({toolkit_home}/aarch64-linux/conf/aoe.ini)" in cpus.sources


def test_the_install_s_aoe_ini_wins_over_one_at_the_documented_place(tmp_path: Path) -> None:
    home = home_with_install(tmp_path, "toolkit-8.1.RC1")
    documented = home / "Ascend/ascend-toolkit/latest/tools/aoe/conf/aoe.ini"
    documented.write_text("[COMMON]\nTUNING_PARALLEL_NUM=4\n")
    facts = gather_facts(env={"HOME": str(home), "PATH": NO_NPU_SMI})
    assert facts.aoe_ini.tuning_parallel_num == "24"
    assert facts.aoe_ini.also_found == [str(documented)]
    assert f"also found, not read: {documented}" in check_tuning_parallel_num(facts, OP).sources


def test_a_cann_8_5_install_behind_its_cann_link(tmp_path: Path) -> None:
    home = home_with_install(tmp_path, "cann-8.5.0")
    facts = gather_facts(env={"HOME": str(home), "PATH": NO_NPU_SMI})
    cann = home / "Ascend/cann"
    assert facts.cann.set_env_scripts == [str(cann / "set_env.sh")]
    assert (facts.cann.version, facts.cann.inner_version) == ("8.5.0", "V100R001C25SPC001B212")
    assert facts.cann.version_file == str(cann / "x86_64-linux/ascend_toolkit_install.info")
    assert facts.cann.driver_version == "25.2.0"
    assert (facts.aoe_ini.path, facts.aoe_ini.tuning_parallel_num) == (str(cann / "conf/aoe.ini"), "32")
    run_loop = check_run_loop(facts, OP)
    assert (run_loop.status, run_loop.observed) == (Status.FAIL, "4096")
    assert run_loop.fix and str(cann / "conf/aoe.ini") in run_loop.fix


def test_every_check_of_the_8_5_host_names_its_documentation(tmp_path: Path) -> None:
    home = home_with_install(tmp_path, "cann-8.5.0")
    results = run_checks(gather_facts(env={"HOME": str(home), "PATH": NO_NPU_SMI}), OP)
    assert all(result.reference for result in results), [r.id for r in results if not r.reference]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[OPAT]\nTUNING_PARALLEL_NUM=2\n[COMMON]\nTUNING_PARALLEL_NUM=16\nRUN_LOOP=20\n", ("16", "20", None)),
        (
            "; generated\n# by the installer\n[COMMON]\nWORK_PATH=/data/%u/aoe\nRUN_LOOP = 7 # seven\n",
            (None, "7", "/data/%u/aoe"),
        ),
        ("WORK_PATH=./\nTUNING_PARALLEL_NUM=12\n", ("12", None, "./")),
    ],
)
def test_aoe_ini_common_section_first_comments_and_percent_signs(tmp_path: Path, text: str, expected: tuple) -> None:  # type: ignore[type-arg]
    ini = tmp_path / "aoe.ini"
    ini.write_text(text)
    values = read_aoe_ini(ini)
    assert (values.tuning_parallel_num, values.run_loop, values.work_path, values.error) == (*expected, None)
