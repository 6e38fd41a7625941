from __future__ import annotations

import json

import pytest

from aoe_runner.errors import InputError
from aoe_runner.results.raw import decode, is_json_prefix


def test_complete_training_file_takes_the_fast_path() -> None:
    raw = decode(b'{"report_1_2": [{"basic": {}}], "report_3_4": []}', "f")
    assert raw.layout == "training"
    assert [key for key, _ in raw.entries] == ["report_1_2", "report_3_4"]
    assert not raw.partial


def test_offline_list_is_one_entry_without_a_key() -> None:
    raw = decode(b'[{"basic": {}}, {"OPAT": {}}]', "f")
    assert raw.layout == "offline"
    assert raw.entries == [(None, [{"basic": {}}, {"OPAT": {}}])]


def test_repeated_report_keys_are_all_kept_in_order() -> None:
    raw = decode(b'{"report_x": [1], "report_x": [2], "report_y": [3]}', "f")
    assert raw.entries == [("report_x", [1]), ("report_x", [2]), ("report_y", [3])]


def test_bom_and_crlf_are_accepted() -> None:
    raw = decode(b'\xef\xbb\xbf{\r\n  "report_1": [1]\r\n}\r\n', "f")
    assert raw.entries == [("report_1", [1])]


def test_truncated_file_keeps_complete_reports_and_names_the_cut_one() -> None:
    text = json.dumps({"report_a": [{"basic": {"tuning_name": "a"}}], "report_b": [{"basic": {"tuning_name": "b"}}]})
    raw = decode(text[: text.index('"b"')].encode(), "f")
    assert raw.partial
    assert [key for key, _ in raw.entries] == ["report_a"]
    assert raw.cut_off_report == "report_b"


def test_truncated_inside_a_multibyte_character() -> None:
    data = json.dumps({"report_a": [1], "report_b": ["调优"]}, ensure_ascii=False).encode()
    cut = data.index("优".encode()) + 1
    raw = decode(data[:cut], "f")
    assert raw.partial and [key for key, _ in raw.entries] == ["report_a"]


def test_empty_file_is_partial_with_nothing_in_it() -> None:
    raw = decode(b"", "f")
    assert raw.partial and raw.entries == []


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"42", "top level is a number"),
        (b'"text"', "top level is a string"),
        (b" 1e400 ", "top level is a number"),  # JSON, beyond the range msgspec decodes
        (b"-1e999", "top level is a number"),
        (b"9" * 4400, "top level is a number"),  # past msgspec's 64 bits and the stdlib's 4,300 digits
        (b"hello", "not JSON"),
        (b'{"report_a": [1]} trailing', "unexpected text after the end"),
        (b'{"report_a": [1] "report_b": [2]}', "expected ',' or '}'"),
        (b'{"report_a": [1, }', "invalid JSON"),
        ("{}".encode("utf-16"), "not UTF-8"),
    ],
)
def test_what_is_not_a_result_file_is_one_clear_error(data: bytes, reason: str) -> None:
    with pytest.raises(InputError) as caught:
        decode(data, "some/file.json")
    assert caught.value.message.startswith("some/file.json: ")
    assert reason in caught.value.message
    assert "\n" not in caught.value.message


def test_json_prefix_scan() -> None:
    assert is_json_prefix('{"a": [1, 2')
    assert is_json_prefix('{"a": "unterminated')
    assert not is_json_prefix('{"a": 1}')  # complete, not cut off
    assert not is_json_prefix("{]")
    assert not is_json_prefix("{ hello")


def test_bytes_that_are_not_utf8_become_replacement_characters_and_a_note() -> None:
    data = b'{"report_1": [{"basic": {"tuning_name": "caf\xe9"}}], "report_2": [{"basic": {"tuning_name": "\xff\xfe"}}]}'
    raw = decode(data, "f")
    assert [value[0]["basic"]["tuning_name"] for _, value in raw.entries] == ["caf\ufffd", "\ufffd\ufffd"]
    first_bad = data.index(b"\xe9")
    assert raw.notes == [
        f"not valid UTF-8 at byte {first_bad} (3 invalid sequence(s) read as U+FFFD; was the file written in another encoding?)"
    ]


def test_a_character_cut_off_by_the_end_of_the_file_is_no_encoding_problem() -> None:
    data = json.dumps({"report_a": [1], "report_b": ["调优"]}, ensure_ascii=False).encode()
    raw = decode(data[: data.index("优".encode()) + 2], "f")
    assert raw.partial and raw.notes == []


def test_a_file_cut_inside_a_long_report_key_names_its_beginning() -> None:
    raw = decode(b'{"report_a": [1], "report_' + b"x" * 1000, "f")
    assert raw.partial and raw.entries == [("report_a", [1])]
    assert raw.cut_off_report == "report_" + "x" * 73 + "..."


@pytest.mark.parametrize(
    ("text", "cut_off"),
    [
        ('{"a": "ab\\', True),  # inside an escape
        ('{"a": "ab\\u12', True),  # inside a \u escape
        ('{"a": "\\ud800\\u', True),  # inside a surrogate pair
        ('{"a": "\\x", "b": 1', False),  # no escape starts with x
        ('{"a": "' + '\\"' * 1000, True),
    ],
)
def test_json_prefix_scan_of_strings(text: str, cut_off: bool) -> None:
    assert is_json_prefix(text) is cut_off
