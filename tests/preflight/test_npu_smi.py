"""`npu-smi info` as real hosts print it (AOE.md §5): a fake npu-smi on PATH prints each table of tests/data/npu-smi/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aoe_runner.preflight.checks import Status
from aoe_runner.preflight.checks.host import check_npu
from aoe_runner.preflight.checks.variables import check_mode_supported
from aoe_runner.preflight.facts import HostFacts, gather_facts
from aoe_runner.preflight.npu_smi import parse_npu_smi, series_of, soc_of
from aoe_runner.preflight.plan import Plan, TuneMode
from tests.preflight.hosts import NPU_SMI_OUTPUTS, fake_npu_smi

OP = Plan(mode=TuneMode.OP, mode_source="--mode")
SUBGRAPH = Plan(mode=TuneMode.SUBGRAPH, mode_source="--mode")


def _facts_with(tmp_path: Path, output: str, soc: str | None = None) -> HostFacts:
    fake_npu_smi(tmp_path / "bin", output)
    return gather_facts(env={"HOME": str(tmp_path), "PATH": str(tmp_path / "bin")}, soc=soc)


def _inventory(facts: HostFacts) -> list[tuple[int, str, str, int]]:
    return [(npu.id, npu.name, npu.health, npu.chips) for npu in facts.npus.listed]


def test_atlas_a2_without_a_banner_and_ids_from_2(tmp_path: Path) -> None:
    facts = _facts_with(tmp_path, "a2-910b4-no-banner")
    assert _inventory(facts) == [(2, "910B4", "OK", 1), (3, "910B4", "OK", 1)]  # the process table adds nothing
    assert (facts.npus.layout, facts.npus.series, facts.npus.npu_smi_version) == ("Chip", "Atlas A2", None)
    assert (facts.soc, facts.sources["soc"]) == ("Ascend910B4", "npu-smi info")
    assert facts.npus.describe() == "NPU 2,3 910B4 OK; 2 NPUs, 2 chips, Atlas A2"


def test_atlas_a2_with_eight_npus_one_in_alarm(tmp_path: Path) -> None:
    facts = _facts_with(tmp_path, "a2-910b3-8npu")
    assert [npu.id for npu in facts.npus.listed] == list(range(8))
    assert [npu.health for npu in facts.npus.listed].count("Alarm") == 1 and facts.npus.listed[5].health == "Alarm"
    assert facts.npus.npu_smi_version == "23.0.6"
    assert facts.npus.describe() == "NPU 0-4 910B3 OK; NPU 5 910B3 Alarm; NPU 6,7 910B3 OK; 8 NPUs, 8 chips, Atlas A2"


def test_atlas_a3_is_told_by_its_layout_and_its_soc_is_not_guessed(tmp_path: Path) -> None:
    facts = _facts_with(tmp_path, "a3-ascend910-8npu-16chip")
    assert _inventory(facts) == [(npu, "Ascend910", "OK", 2) for npu in range(8)]
    assert (facts.npus.layout, facts.npus.series) == ("Chip Phy-ID", "Atlas A3")
    assert facts.soc is None
    assert facts.sources["soc"].startswith("unknown: npu-smi shows the Atlas A3 layout and names the chip only 'Ascend910'")
    assert facts.npus.describe() == (
        "NPU 0-7 Ascend910 OK; 8 NPUs, 16 chips, Atlas A3 layout (npu-smi does not name the exact SoC)"
    )


def test_subgraph_mode_is_refused_on_an_atlas_a3_host_and_op_mode_passes(tmp_path: Path) -> None:
    facts = _facts_with(tmp_path, "a3-ascend910-8npu-16chip")
    refused = check_mode_supported(facts, SUBGRAPH)
    assert (refused.status, refused.observed) == (Status.FAIL, "subgraph on Atlas A3, exact SoC unknown")
    assert refused.fix == "use --mode op: Atlas A3 does not support subgraph tuning"
    assert any("Chip Phy-ID header layout" in source for source in refused.sources)
    assert check_mode_supported(facts, OP).status is Status.PASS


def test_the_a3_layout_still_refuses_subgraph_mode_when_soc_names_a_first_generation_910(tmp_path: Path) -> None:
    facts = _facts_with(tmp_path, "a3-ascend910-8npu-16chip", soc="Ascend910A")
    assert (facts.soc, facts.sources["soc"]) == ("Ascend910A", "--soc")
    assert check_mode_supported(facts, SUBGRAPH).status is Status.FAIL


def test_310p3_duo_cards_show_two_chips_under_one_npu_id(tmp_path: Path) -> None:
    facts = _facts_with(tmp_path, "310p3-duo")
    assert _inventory(facts) == [(8, "310P3", "OK", 2), (9, "310P3", "OK/Warning", 2)]
    assert (facts.npus.layout, facts.npus.series, facts.soc) == ("Chip Device", "inference (Ascend310*)", "Ascend310P3")
    assert check_mode_supported(facts, SUBGRAPH).status is Status.PASS


def test_310b_with_no_bus_id(tmp_path: Path) -> None:
    facts = _facts_with(tmp_path, "310b1-bus-na")
    assert _inventory(facts) == [(0, "310B1", "OK", 1)]
    assert facts.soc == "Ascend310B1"


def test_the_npu_check_shows_the_inventory(tmp_path: Path) -> None:
    observed = check_npu(_facts_with(tmp_path, "310p3-duo"), OP).observed
    assert observed.endswith("; npu-smi: NPU 8 310P3 OK; NPU 9 310P3 OK/Warning; 2 NPUs, 4 chips, inference (Ascend310*)")


@pytest.fixture
def a3_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_npu_smi(tmp_path / "bin", "a3-ascend910-8npu-16chip")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "AOE_MODE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_preflight_on_an_a3_host_refuses_subgraph_and_shows_the_hardware_in_its_header(cli, a3_host: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli("preflight", "--mode", "subgraph")
    assert result.code == 1
    header = result.out.splitlines()[:3]
    assert "SoC unknown" in header[1]
    assert header[2] == ("npu-smi: NPU 0-7 Ascend910 OK; 8 NPUs, 16 chips, Atlas A3 layout (npu-smi does not name the exact SoC)")
    row = next(line for line in result.out.splitlines() if "mode supported by the" in line)
    assert row.startswith("FAIL") and "subgraph on Atlas A3, exact SoC" in row


def test_preflight_json_carries_the_inventory(cli, a3_host: Path) -> None:  # type: ignore[no-untyped-def]
    npus = json.loads(cli("preflight", "--json").out)["facts"]["npus"]
    assert npus["listed"][0] == {"id": 0, "name": "Ascend910", "health": "OK", "chips": 2}
    assert (npus["layout"], npus["series"], npus["npu_smi_version"]) == ("Chip Phy-ID", "Atlas A3", "24.1.rc3.3")


def test_a_bare_ascend910_without_the_a3_header_is_not_named_a_soc() -> None:
    text = (NPU_SMI_OUTPUTS / "a3-ascend910-8npu-16chip.txt").read_text()
    table = parse_npu_smi("\n".join(line for line in text.splitlines() if "Phy-ID" not in line))
    assert (table.layout, series_of(table)) == (None, None)
    soc, source = soc_of(table)
    assert soc is None and "a first-generation 910 or an Atlas A3" in source
