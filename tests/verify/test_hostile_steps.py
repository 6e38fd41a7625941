"""Impossible step times and patterns that capture no number: one exit-4 line naming the log and its line, never a
crash and never a verdict drawn from them."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aoe_runner.errors import InputError
from aoe_runner.verify.stats import compare
from aoe_runner.verify.steps import BUILT_IN, LONGEST_MS, SHORTEST_MS, StepFormat, custom_format
from tests.tune.runner import Home, aoe_runner

MS = BUILT_IN[0]  # MindSpore `per step time: X ms`
GOOD = "epoch: 1 step: 1, per step time: 50.0 ms\n" * 3


@pytest.mark.parametrize(
    ("fmt", "line", "reason"),
    [
        (MS, "per step time: 0 ms", "step time 0 ms is not a step time"),
        (MS, "per step time: 0.0000000001 ms", "step time 0.0000000001 ms is not a step time"),
        (MS, "per step time: 1e999 ms", "step time 1e999 ms is not a step time"),  # float() makes it inf
        (BUILT_IN[2], "global_step/sec: 0", "step time 0 steps/s is not a step time"),
        (MS, "per step time: -5 ms", "step time -5 ms is not a step time"),  # built-in formats read signs,
        (MS, "per step time: inf ms", "step time 'inf' is not a decimal number"),  # inf and nan too, to refuse them
        (BUILT_IN[3], "step_time=NaN ms", "step time 'NaN' is not a decimal number"),
        (BUILT_IN[2], "global_step/sec: -infinity", "step time '-infinity' is not a decimal number"),
        (custom_format(r"took (\S+) ms", None), "took abc ms", "step time 'abc' is not a decimal number"),
        (custom_format(r"took (\S+) ms", None), "took nan ms", "step time 'nan' is not a decimal number"),
        (custom_format(r"took (\S+) ms", None), "took inf ms", "step time 'inf' is not a decimal number"),
        (custom_format(r"took (\S+) ms", None), "took -3.5 ms", "step time -3.5 ms is not a step time"),
        (custom_format(r"took (\S*) ms", "s"), "took  ms", "the step-time group captured nothing"),
        (custom_format(r"step(?: (\d+))? done", None), "step done", "the step-time group captured nothing"),
    ],
)
def test_an_impossible_step_time_names_the_log_and_line(fmt: StepFormat, line: str, reason: str) -> None:
    with pytest.raises(InputError) as raised:
        fmt.step_times_ms(GOOD.replace("per step time: 50.0 ms", "fine") + line + "\n" + GOOD, "runs/r1/log.txt")

    assert raised.value.where == "runs/r1/log.txt, line 4"
    assert raised.value.reason.startswith(reason) and fmt.name in raised.value.reason


_PIECES = st.sampled_from(
    ["per step time: ", "global_step/sec: ", "step time ", "step_time=", "took ", " ms", "ms", " s", "s", "\n", " ",
     "0", "1", "9", ".", "e", "E", "-", "+", "inf", "nan", "1e999", "1e-400", "١٢", "1_0", "\x00", "\ud800"]
)  # fmt: skip
_TEXTS = st.lists(st.one_of(_PIECES, st.text(max_size=5)), max_size=30).map("".join)
_FORMATS = st.sampled_from(
    [*BUILT_IN, custom_format(r"took (\S*) ?ms", None), custom_format(r"took (.*)", "s"),
     custom_format(r"step(?: (\d+))? done", None), custom_format(r"(-?[\d.e]*)ms", "steps/s"), custom_format(r"([^\n]+)", None)]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(fmt=_FORMATS, text=_TEXTS)
def test_parsing_any_text_gives_step_times_or_one_input_error(fmt: StepFormat, text: str) -> None:
    try:
        times = fmt.step_times_ms(text, "log.txt")
    except InputError as error:
        assert re.fullmatch(r"log\.txt, line \d+", error.where)
        return
    assert all(SHORTEST_MS <= value <= LONGEST_MS for value in times)


_STEP_TIMES = st.floats(min_value=SHORTEST_MS, max_value=LONGEST_MS)
_ANY_FLOAT = st.one_of(_STEP_TIMES, st.floats(), st.sampled_from([0.0, -1.0, math.inf, math.nan, 5e-324, 1e308]))


@settings(max_examples=200, deadline=None)
@given(
    baseline=st.lists(st.lists(_ANY_FLOAT, max_size=6), max_size=3),
    tuned=st.lists(st.lists(_ANY_FLOAT, max_size=6), max_size=3),
)
def test_compare_gives_finite_figures_or_refuses_what_is_no_step_time(baseline: list, tuned: list) -> None:  # type: ignore[type-arg]
    usable = all(
        arm and all(run and all(SHORTEST_MS <= v <= LONGEST_MS for v in run) for run in arm) for arm in (baseline, tuned)
    )
    try:
        comparison = compare(baseline, tuned, 2.0, samples=50)
    except ValueError:
        assert not usable
        return
    assert usable
    figures = (
        comparison.speedup,
        comparison.ci_low,
        comparison.ci_high,
        comparison.baseline.median_ms,
        comparison.tuned.median_ms,
    )
    assert all(math.isfinite(figure) and figure > 0 for figure in figures)
    assert comparison.speedup == comparison.baseline.median_ms / comparison.tuned.median_ms


@pytest.mark.parametrize(
    ("baseline", "tuned"),
    [([[50.0]], [[0.0]]), ([[50.0]], [[-1.0]]), ([[50.0]], [[math.inf]]), ([[math.nan]], [[50.0]]), ([[1e308]], [[5e-324]])],
)
def test_compare_refuses_what_would_divide_by_zero_or_overflow(baseline: list, tuned: list) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError, match="step times from 1 ns to 10\\^12 ms"):
        compare(baseline, tuned, 2.0, samples=10)


STEPS_SCRIPT = """\
import sys
for step in range(8):
    print(f"epoch: 1 step: {step}, per step time: 50.0 ms")
print(sys.argv[1])
"""


@pytest.mark.parametrize(
    ("last_line", "options", "reason"),
    [
        ("epoch: 1 step: 8, per step time: 0 ms", (), "step time 0 ms is not a step time"),
        ("epoch: 1 step: 8, per step time: 1e999 ms", (), "step time 1e999 ms is not a step time"),
        ("epoch: 1 step: 8, per step time: -5 ms", (), "step time -5 ms is not a step time"),
        ("epoch: 1 step: 8, per step time: nan ms", (), "step time 'nan' is not a decimal number"),
        ("took n/a ms", ("--step-pattern", r"(?:per step time:|took) (\S+) ms"), "step time 'n/a' is not a decimal number"),
        ("step done", ("--step-pattern", r"per step time: (\d+)\.0 ms|step done"), "the step-time group captured nothing"),
    ],
)
def test_verify_stops_at_an_impossible_step_time_with_one_line(
    tmp_path: Path, last_line: str, options: tuple[str, ...], reason: str
) -> None:
    home = Home(tmp_path)
    (tmp_path / "bank").mkdir()
    (tmp_path / "steps.py").write_text(STEPS_SCRIPT)

    result = aoe_runner(
        home, "verify", "steps.py", "--bank", "bank", "--repeats", "1", "--python", sys.executable, *options, "--", last_line
    )

    assert result.returncode == 4, result.stderr
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if not line.startswith("aoe-runner: ")]
    assert len(errors) == 1 and re.fullmatch(rf"error: .*, line 9: {re.escape(reason)}.* \(read as .*\)", errors[0]), errors
