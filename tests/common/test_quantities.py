"""Sizes, durations and percentages take a unit: a bare number is a usage error that says which units are accepted."""

from __future__ import annotations

import pytest

from aoe_runner.common.quantities import ascii_whole, parse_duration, parse_percent, parse_size
from aoe_runner.errors import UsageError
from tests.conftest import DATA

SMALL = DATA / "facts" / "small-2c.json"


@pytest.mark.parametrize(
    ("text", "size"),
    [("12GiB", 12 * 2**30), ("12GB", 12 * 10**9), ("12G", 12 * 10**9), ("1.5 MiB", 3 * 2**19), ("512kib", 512 * 1024), ("7B", 7)],
)
def test_sizes_with_their_units(text: str, size: int) -> None:
    assert parse_size(text, "--model-memory") == size


@pytest.mark.parametrize(
    ("text", "why"),
    [("12", "has no unit"), ("lots", "is not a size"), ("12 parsecs", "is not a size"), ("0GiB", "more than zero")],
)
def test_a_size_without_a_unit_it_knows_is_refused(text: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        parse_size(text, "--model-memory")


@pytest.mark.parametrize(("text", "value"), [("2%", 2.0), ("2.5 %", 2.5), ("0", 0.0), ("0%", 0.0), ("1000%", 1000.0)])
def test_percentages_with_their_sign(text: str, value: float) -> None:
    assert parse_percent(text, "--threshold") == value


@pytest.mark.parametrize(
    ("text", "why"), [("2", "has no unit"), ("0.05", "has no unit"), ("abc", "not a percentage"), ("nan%", "between")]
)
def test_a_percentage_without_its_sign_is_refused(text: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        parse_percent(text, "--threshold")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["preflight", "--facts", str(SMALL), "--model-memory", "12"],
            "error: --model-memory: '12' has no unit: write it with one (12GiB or 12GB; units B, KB, MB, GB, TB (also K, M, G, T), KiB, MiB, GiB, TiB) (see 'aoe-runner preflight --help')\n",
        ),
        (
            ["tune", "train.py", "--mode", "op", "--timeout", "90", "--dry-run"],
            "error: --timeout: '90' has no unit: write it with one (90s, 30m, 2h, 1h30m, 500ms, 1d) (see 'aoe-runner tune --help')\n",
        ),
        (
            ["runs", "prune", "--older-than", "30"],
            "error: --older-than: '30' has no unit: write it with one (90s, 30m, 2h, 1h30m, 500ms, 1d) (see 'aoe-runner runs prune --help')\n",
        ),
        (
            ["report", "sample_results", "--min-gain", "5"],
            "error: --min-gain: '5' has no unit: write a percentage with % (for example 5%) (see 'aoe-runner report --help')\n",
        ),
    ],
)
def test_the_command_line_refuses_a_bare_number_in_one_line(cli, argv: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    result = cli(*argv)
    assert (result.code, result.err) == (2, message)


def test_a_model_memory_of_12_bytes_can_no_longer_pass_the_memory_check(cli) -> None:  # type: ignore[no-untyped-def]
    """`--model-memory 12` was 12 bytes: the check passed ("22.9 GiB >= 96 bytes"), a typo disabled it."""
    assert cli("preflight", "--facts", str(SMALL), "--model-memory", "12").code == 2
    assert "memory" in cli("preflight", "--facts", str(SMALL), "--model-memory", "12GiB").out


@pytest.mark.parametrize(("text", "number"), [("1", 1), (" 32 ", 32), ("+2", 2), ("-4", -4), ("007", 7)])
def test_a_whole_number_in_ascii_digits(text: str, number: int) -> None:
    assert ascii_whole(text) == number


@pytest.mark.parametrize("text", ["１", "１２", "٣", "1_0", "²", "", " ", "+", "-", "1.0", "1e3", "0x10", "1 2"])
def test_what_only_python_reads_as_a_number_is_none(text: str) -> None:
    """int() reads full-width and Arabic-Indic digits and underscores; str.isdigit() passes '²', which int() refuses."""
    assert ascii_whole(text) is None


@pytest.mark.parametrize("text", ["１２GiB", "٣m", "1２s"])
def test_sizes_and_durations_take_ascii_digits_only(text: str) -> None:
    with pytest.raises(UsageError):
        parse_size(text, "--model-memory") if text.endswith("GiB") else parse_duration(text, "--timeout")
