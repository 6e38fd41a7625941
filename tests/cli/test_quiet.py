"""-q: results and errors only, the same result as without it."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SAMPLES


def test_quiet_keeps_the_result_and_drops_notes_and_warnings(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    loud, quiet = cli("report", str(SAMPLES)), cli("-q", "report", str(SAMPLES))
    assert "warning: " in loud.err and quiet.err == ""
    assert (quiet.code, quiet.out) == (loud.code, loud.out)
    written = tmp_path / "summary.json"
    result = cli("--quiet", "report", str(SAMPLES), "--json", "-o", str(written))
    assert result.err == "" and written.read_text().startswith("{")  # no 'wrote FILE' either


def test_quiet_still_says_every_error(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli("-q", "report", str(tmp_path / "nothere"))
    assert result.code == 4 and result.err.startswith("error: ")


def test_quiet_is_one_commands_choice(cli) -> None:  # type: ignore[no-untyped-def]
    cli("-q", "report", str(SAMPLES))
    assert "warning: " in cli("report", str(SAMPLES)).err
