"""The moment in a result file's name or a report's key, read without strptime, as strptime reads it."""

from __future__ import annotations

from datetime import datetime

from hypothesis import example, given
from hypothesis import strategies as st

from aoe_runner.results import legacy
from aoe_runner.results.keys import file_timestamp, moment_of_digits, parse_report_key


def _strptime(digits: str) -> datetime | None:
    try:
        return datetime.strptime(digits, "%Y%m%d%H%M%S")
    except ValueError:
        return None


@given(st.text(alphabet="0123456789", min_size=14, max_size=14))
@example("20260311101500")
@example("20240229235959")  # a leap day
@example("20250229000000")
@example("20261301000000")
@example("20260100000000")
@example("20260132000000")
@example("20260101240000")
@example("20260101006000")
@example("20260101000060")  # strptime's %S takes 60 and 61, then datetime refuses them
@example("20260101000061")
@example("00000101000000")
@example("00010101000000")
def test_ascii_digits_give_strptimes_moment(digits: str) -> None:
    assert moment_of_digits(digits) == _strptime(digits)


@given(st.text(alphabet="0123456789٠١٢", min_size=0, max_size=16))
def test_other_digits_or_lengths_give_no_moment_or_strptimes(digits: str) -> None:
    moment = moment_of_digits(digits)
    if len(digits) == 14 and digits.isascii():
        assert moment == _strptime(digits)
    else:
        assert moment is None


def test_names_and_keys_keep_their_milliseconds() -> None:
    assert file_timestamp("aoe_result_opat_20260311101500123_51002.json") == datetime(2026, 3, 11, 10, 15, 0, 123000)
    assert file_timestamp("aoe_result_opat_20260230101500_51002.json") is None
    assert parse_report_key("report_20260311_1015007_42") == (datetime(2026, 3, 11, 10, 15, 0, 7000), 42)
    assert legacy.file_timestamp("tune_result_20260311_101500123_pid7.json") == datetime(2026, 3, 11, 10, 15, 0, 123000)
    assert legacy.file_timestamp("tune_result_20261311_101500_pid7.json") is None
