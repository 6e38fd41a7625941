"""What may start a tuning run: --skip names what to accept, some faults no flag waives, a refused run
creates nothing, and a dry run says what a real run would do and whether it would start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tune.runner import SIMULATOR, Home, aoe_runner


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


def failing_checks(home: Home) -> list[str]:
    """The checks this host fails for an op run (no NPU here: at least the NPU check)."""
    result = aoe_runner(home, "preflight", "--mode", "op", "--json")
    failed = [check["id"] for check in json.loads(result.stdout)["checks"] if check["status"] == "fail"]
    assert failed, "these tests need a host that fails preflight, as every host without an NPU does"
    return failed


def tune_args(*options: str) -> list[str]:
    return ["tune", str(SIMULATOR), "--mode", "op", *options, "--", "exit", "0"]


def test_a_refused_run_creates_neither_the_bank_nor_a_record(home: Home) -> None:
    bank = home.root / "new" / "bank"

    result = aoe_runner(home, *tune_args("--bank", str(bank)))

    assert result.returncode == 1 and "preflight failed" in result.stderr
    assert not bank.parent.exists() and home.manifests() == []


def test_skip_accepts_exactly_the_named_checks(home: Home) -> None:
    failed = failing_checks(home)
    bank = home.root / "bank"

    too_few = aoe_runner(home, *tune_args("--bank", str(bank), "--skip", failed[0]))
    if len(failed) > 1:
        assert too_few.returncode == 1 and f"preflight failed ({', '.join(failed[1:])})" in too_few.stderr
    accepted = aoe_runner(home, *tune_args("--bank", str(bank), *[f"--skip={name}" for name in failed]))

    assert accepted.returncode == 0, accepted.stderr
    assert bank.is_dir()  # created once the run was allowed to start
    preflight = home.only_manifest()["preflight"]
    assert preflight["skipped"] == failed and preflight["failed"] == [] and preflight["forced"] is False


def test_skip_takes_comma_lists_and_refuses_unknown_names(home: Home) -> None:
    failed = failing_checks(home)
    accepted = aoe_runner(home, *tune_args("--skip", ",".join(failed)))
    assert accepted.returncode == 0, accepted.stderr

    unknown = aoe_runner(home, *tune_args("--skip", "npu,no_such_check"))
    assert unknown.returncode == 2
    assert "--skip: no_such_check is not a preflight check (one of " in unknown.stderr and "npu" in unknown.stderr


@pytest.mark.parametrize("flags", [("--force",), ("--skip", "npu")])
def test_a_bank_that_is_a_file_is_refused_whatever_the_flags(home: Home, flags: tuple[str, ...]) -> None:
    bank = home.root / "bank"
    bank.write_text("not a directory")

    result = aoe_runner(home, *tune_args("--bank", str(bank), *flags))

    assert result.returncode == 4
    assert f"{bank}: the bank is not a directory; --force and --skip cannot change that" in result.stderr
    assert home.manifests() == [] and bank.read_text() == "not a directory"


def test_a_missing_script_is_refused_even_with_force(home: Home) -> None:
    result = aoe_runner(home, "tune", str(home.root / "missing.py"), "--mode", "op", "--force")

    assert result.returncode == 4 and "missing.py" in result.stderr and home.manifests() == []


def test_a_dry_run_shows_the_verdict_and_every_change_and_creates_nothing(home: Home) -> None:
    bank = home.root / "new-bank"

    refused = aoe_runner(home, *tune_args("--bank", str(bank), "--timeout", "90m", "--dry-run"))
    forced = aoe_runner(home, *tune_args("--bank", str(bank), "--timeout", "90m", "--dry-run", "--force"))

    assert refused.returncode == 1 and forced.returncode == 0, (refused.stderr, forced.stderr)
    for line in (
        f"would create the bank directory {bank}",
        "would hold the lock of device 0 (free now)",
        f"would hold the lock of the bank {bank} (free now)",
        "would stop the script after 1h30m (--timeout), then SIGKILL after 10s more (--grace)",
    ):
        assert line in refused.stdout and line in forced.stdout
    assert "preflight failed (" in refused.stdout and "a real run would be refused" in refused.stdout
    assert "the run would start anyway (--force)" in forced.stdout and "a real run would start" in forced.stdout
    assert not bank.exists() and home.manifests() == []


def test_a_dry_run_refuses_a_campaign_variable_a_real_run_refuses(home: Home) -> None:
    """AOE_RUNNER_CAMPAIGN that campaign run did not set: the real run exits 2; its dry run said it would start."""
    for argv in (tune_args("--dry-run", "--force"), tune_args("--force")):
        refused = aoe_runner(home, *argv, env={"AOE_RUNNER_CAMPAIGN": "x"})
        assert refused.returncode == 2 and "AOE_RUNNER_CAMPAIGN: not what 'aoe-runner campaign run' sets" in refused.stderr
    assert home.manifests() == []
