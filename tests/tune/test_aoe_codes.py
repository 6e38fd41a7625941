"""AOE and CANN error codes in tune's output are named with a next step, live and in the run record."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aoe_runner.tune.aoe_codes import CLASSES, CodeScanner
from tests.tune.runner import Home, tune

LOG = (
    b"step 1 loss 0.5\n"
    b"[ERROR] AOE(1,python) [EG0013] Device error: set device 0 failed.\n"
    b"EH9999: init runtime platform info failed, SocVersion = Ascend910B3\n"
    b"[ERROR] AOE [EG10001] certificate\n"
    b"[ERROR] GE EZ3003 operator package not installed\n"
    b"[ERROR] AOE [EG0013] again\n"
    b"not codes: EG001312 XEG0013 EG001 eg0013 TEG0000\n"
)


def scan(chunks: list[bytes]) -> dict[str, int]:
    scanner = CodeScanner()
    for chunk in chunks:
        scanner.feed(chunk)
    scanner.feed(b"\n")
    return {seen.code: seen.count for seen in scanner.seen}


def test_codes_are_counted_and_classed_and_lookalikes_are_not() -> None:
    scanner = CodeScanner()
    scanner.feed(LOG)
    seen = {code.code: code for code in scanner.seen}

    assert {code: found.count for code, found in seen.items()} == {"EG0013": 2, "EH9999": 1, "EG10001": 1, "EZ3003": 1}
    assert seen["EG0013"].preflight_check == "npu" and "device" in seen["EG0013"].meaning
    assert seen["EH9999"].first_line == "EH9999: init runtime platform info failed, SocVersion = Ascend910B3"
    assert seen["EZ3003"].preflight_check == "cann"


@given(st.lists(st.integers(min_value=0, max_value=len(LOG)), max_size=12))
def test_where_the_output_is_cut_into_chunks_changes_nothing(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [LOG[start:end] for start, end in zip([0, *points], [*points, len(LOG)], strict=True)]

    assert scan(chunks) == scan([LOG])


_LINES = st.sampled_from(
    [
        b"step 1 loss 0.5 lr 0.0001\n",
        b"throughput 1234.5 samples/s\n",
        b"[ERROR] AOE [EG0013] x\n",
        b"WG0000 low memory\n",
        b"E",
        b"W",
        b"G10001\n",
        b"not a code: XEG0013 EG001\n",
    ]
)


@given(st.lists(_LINES, max_size=40), st.lists(st.integers(min_value=0, max_value=2_000), max_size=12))
def test_plain_output_between_codes_changes_nothing(lines: list[bytes], cuts: list[int]) -> None:
    """Chunks without an E or a W take a shortcut; a code cut between such a chunk and the next is still seen."""
    text = b"".join(lines)
    points = sorted({min(cut, len(text)) for cut in cuts})
    chunks = [text[start:end] for start, end in zip([0, *points], [*points, len(text)], strict=True)]
    expected: dict[str, int] = {}
    for code in re.findall(rb"(?<![A-Za-z0-9])([EW][A-Z]\d{4,5})(?![A-Za-z0-9])", text + b"\n"):
        expected[code.decode()] = expected.get(code.decode(), 0) + 1

    assert scan(chunks) == expected


@pytest.mark.parametrize("code", sorted(CLASSES))
def test_every_documented_code_has_a_class_and_a_next_step(code: str) -> None:
    scanner = CodeScanner()
    scanner.feed(f"x [{code}] y\n".encode())
    (seen,) = scanner.seen
    assert seen.code == code and seen.meaning and seen.next_step and "CANN error code" not in seen.meaning


def test_tune_names_codes_live_and_in_the_record_and_warns_when_no_result_file_appeared(tmp_path: Path) -> None:
    home = Home(tmp_path)

    code, _, err = tune(home, "aoe-errors")

    assert code == 0, err
    assert "AOE/CANN code EG0013: AOE cannot use the device" in err and "preflight check 'npu'" in err
    assert "WG0000" in err and "EH9999" in err
    manifest = home.only_manifest()
    assert {seen["code"]: seen["count"] for seen in manifest["aoe_codes"]} == {"EG0013": 2, "WG0000": 1, "EH9999": 1}
    work = str(Path(manifest["work_dir"]))
    (warning,) = [w for w in manifest["warnings"] if "no aoe_result_*.json appeared" in w]
    assert work in warning and f"{work}/aoe_data" in warning
    assert "point --work-dir there" in err
