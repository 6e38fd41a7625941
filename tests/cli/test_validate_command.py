from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import DATA, SAMPLES


def test_every_complete_sample_is_valid(cli) -> None:  # type: ignore[no-untyped-def]
    complete = [str(p) for p in sorted(SAMPLES.rglob("*.json")) if "live" not in p.parts]
    result = cli("validate", *complete, str(DATA / "bom_crlf"), str(DATA / "duplicate_keys"))
    assert result.code == 0, result.out
    assert result.out.count(": valid\n") == len(complete) + 2


def test_schema_violations_print_their_json_path_and_exit_1(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    document = json.loads((SAMPLES / "training_opat" / "aoe_result_opat_20260310142233517_41237.json").read_text())
    report = document["report_20260310142233517_41240"]
    report[1]["OPAT"]["repo_summary"]["total_num"] = "sixteen"
    report[1]["OPAT"]["repo_modified_operators"][0]["tune_performance"]["Format"]["update_mode"] = "replace"
    path = tmp_path / "aoe_result_opat_1.json"
    path.write_text(json.dumps(document))
    result = cli("validate", str(path))
    assert result.code == 1
    assert (
        f"{path}: $.report_20260310142233517_41240[1].OPAT.repo_summary.total_num: 'sixteen' is not of type 'integer'"
        in result.out
    )


def test_odd_records_file_fails_the_schema(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("validate", str(DATA / "odd_records"))
    assert result.code == 1
    assert "opat_tuning_result: 'tuning done?' is not one of" in result.out


def test_truncated_and_non_json_files_are_bad_input(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("validate", str(SAMPLES / "live"), str(DATA / "bad" / "aoe_result_opat_garbage.json"), str(SAMPLES / "cann60"))
    assert result.code == 4
    assert "cann60" in result.out and ": valid" in result.out
    assert len(result.err.splitlines()) == 2
    assert "looks cut off" in result.err
