from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from aoe_runner.results.validation import raw_schema
from aoe_runner.schema_export import GENERATED, generated_schema
from tests.conftest import ROOT


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_checked_in_schema_matches_the_models(name: str) -> None:
    checked_in = (ROOT / "schemas" / name).read_text(encoding="utf-8")
    assert checked_in == generated_schema(name), f"schemas/{name} is stale: run `python -m aoe_runner.schema_export`"


@pytest.mark.parametrize("path", sorted((ROOT / "schemas").glob("*.json")), ids=lambda p: p.name)
def test_every_schema_is_itself_a_valid_draft_2020_12_schema(path) -> None:  # type: ignore[no-untyped-def]
    Draft202012Validator.check_schema(json.loads(path.read_text(encoding="utf-8")))


def test_the_installed_raw_schema_is_the_checked_in_one() -> None:
    assert raw_schema() == json.loads((ROOT / "schemas" / "aoe-result.schema.json").read_text(encoding="utf-8"))
