"""The step-time formats, on lines as the frameworks print them (AOE.md §3)."""

from __future__ import annotations

import pytest

from aoe_runner.errors import InputError, UsageError
from aoe_runner.verify.steps import BUILT_IN, custom_format, default_warmup, detect_format

MINDSPORE = """\
epoch: 1 step: 1875, loss is 0.08453
epoch time: 22154.670 ms, per step time: 47.339 ms
epoch: 2 step: 1875, loss is 0.05321
Train epoch time: 21890.112 ms, per step time: 46.776 ms
"""
MINDSPORE_SECONDS = "epoch: 3 step: 100, loss is 1.8765, per step time: 1.2345s, fps: 8.37\n"
TENSORFLOW = """\
INFO:tensorflow:global_step/sec: 12.3
I1121 10:00:01.000000 140 basic_session_run_hooks.py:260] global_step/sec: 8
INFO:tensorflow:loss = 0.25, step = 300 (8.130 sec)
"""
COMMON = "[rank0] iter 20 | step time: 101.5 ms | loss 2.31\nstep_time=0.25s lr=0.001\n"


def test_mindspore_per_step_time_in_ms() -> None:
    fmt = detect_format([MINDSPORE])
    assert fmt is not None and fmt.name == "MindSpore `per step time: X ms`"
    assert fmt.step_times_ms(MINDSPORE) == [47.339, 46.776]


def test_mindspore_per_step_time_in_seconds_with_fps() -> None:
    fmt = detect_format([MINDSPORE_SECONDS])
    assert fmt is not None and fmt.name == "MindSpore `per step time: X s`"
    assert fmt.step_times_ms(MINDSPORE_SECONDS) == [pytest.approx(1234.5)]


def test_tensorflow_global_steps_per_second_become_time_per_step() -> None:
    fmt = detect_format([TENSORFLOW])
    assert fmt is not None and fmt.name == "TensorFlow `global_step/sec: X`"
    assert fmt.step_times_ms(TENSORFLOW) == [pytest.approx(1000 / 12.3), 125.0]


def test_common_step_time_lines() -> None:
    by_name = {fmt.name: fmt for fmt in BUILT_IN}
    assert by_name["`step time X ms`"].step_times_ms(COMMON) == [101.5]
    assert by_name["`step time X s`"].step_times_ms(COMMON) == [250.0]


def test_the_format_with_most_matches_wins_across_logs() -> None:
    fmt = detect_format([MINDSPORE, MINDSPORE_SECONDS, MINDSPORE])
    assert fmt is not None and fmt.name == "MindSpore `per step time: X ms`"
    assert detect_format(["no step times here\n"]) is None


def test_a_custom_pattern_with_a_rate_unit() -> None:
    fmt = custom_format(r"throughput (\d+) it/s", "steps/s")
    assert fmt.step_times_ms("throughput 20 it/s\nthroughput 40 it/s\n") == [50.0, 25.0]
    with pytest.raises(InputError, match=r"^log.txt, line 2: step time 0 steps/s is not a step time"):
        fmt.step_times_ms("throughput 20 it/s\nthroughput 0 it/s\n", "log.txt")  # a zero rate is an infinite step


def test_custom_pattern_errors() -> None:
    with pytest.raises(UsageError, match="exactly one capture group"):
        custom_format(r"\d+ ms", None)
    with pytest.raises(UsageError, match="--unit: 'minutes'"):
        custom_format(r"(\d+)", "minutes")


@pytest.mark.parametrize(("steps", "dropped"), [(0, 0), (3, 0), (4, 1), (12, 3), (20, 5), (1000, 5)])
def test_default_warmup(steps: int, dropped: int) -> None:
    assert default_warmup(steps) == dropped
