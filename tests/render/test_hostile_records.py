"""preflight, runs and verify output with hostile host facts, script names and patterns, through real commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import DATA
from tests.render.hostile import FORBIDDEN, assert_markdown_safe, markdown_cells
from tests.tune.runner import Home, aoe_runner

FORGED = "\x1b[2J\r\nerror: forged\u202e\x9b"
ESCAPED = "\\x1b[2J\\r\\nerror: forged\\u202e\\x9b"


def _lines_without_forgery(text: str) -> list[str]:
    assert FORBIDDEN.search(text) is None
    lines = text.splitlines()
    assert not [line for line in lines if line.startswith("error: forged")]
    return lines


def test_preflight_shows_hostile_facts_as_escapes(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    facts = json.loads((DATA / "facts" / "small-2c.json").read_text())
    facts.update(hostname=f"host{FORGED}", soc=f"Ascend910B3{FORGED}", environment={"TE_PARALLEL_COMPILER": f"8{FORGED}"})
    facts["cann"]["version"] = f"7.0{FORGED}"
    facts["aoe_ini"].update(path=f"/etc/aoe.ini{FORGED}", error=f"unreadable{FORGED}")
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))

    result = cli("preflight", "--facts", str(path))

    assert result.code == 1  # failed checks, nothing worse
    lines = _lines_without_forgery(result.out)
    assert lines[1] == f"host host{ESCAPED}: 2 CPUs, 7.5 GiB available, SoC Ascend910B3{ESCAPED}, CANN 7.0{ESCAPED}"
    assert f"8{ESCAPED}" in result.out


def test_runs_list_and_show_escape_a_hostile_script_name(tmp_path: Path) -> None:
    home = Home(tmp_path)
    script = tmp_path / f"train{FORGED}.py"
    script.write_text("print('training')\n")

    tuned = aoe_runner(home, "tune", str(script), "--framework", "tf", "--mode", "op", "--force", "--python", sys.executable)
    listed = aoe_runner(home, "runs", "list")
    shown = aoe_runner(home, "runs", "show", "latest")

    assert (tuned.returncode, listed.returncode, shown.returncode) == (0, 0, 0), tuned.stderr + listed.stderr + shown.stderr
    _lines_without_forgery(tuned.stderr)
    assert len(_lines_without_forgery(listed.stdout)) == 3  # header, rule, the run
    assert f"train{ESCAPED}.py" in listed.stdout
    assert f"  script     {tmp_path}/train{ESCAPED}.py (sha256 " in _lines_without_forgery(shown.stdout)[1]


STEPS_SCRIPT = """\
for step in range(12):
    print(f"epoch: 1 step: {step}, took 50.0 ms\\x1b[2J")
"""


def test_verify_escapes_a_hostile_script_name_and_step_pattern(tmp_path: Path) -> None:
    home = Home(tmp_path)
    (tmp_path / "bank").mkdir()
    script = tmp_path / f"steps{FORGED}|x`<b>.py"
    script.write_text(STEPS_SCRIPT)
    pattern = "took ([\\d.]+) ms\x1b\\[2J|<script>"

    def verify(fmt: str) -> str:
        result = aoe_runner(home, "verify", str(script), "--bank", "bank", "--repeats", "1", "--step-pattern", pattern, "-f", fmt)
        assert result.returncode == 0, result.stderr
        _lines_without_forgery(result.stderr)
        return result.stdout

    table, markdown = verify("table"), verify("markdown")

    _lines_without_forgery(table)
    assert f"script {tmp_path}/steps{ESCAPED}|x`<b>.py; bank" in table
    assert "step times from --step-pattern took ([\\d.]+) ms\\x1b\\[2J|<script>;" in table
    assert "<" not in markdown and "steps\\\\x1b[2J\\\\r\\\\nerror: forged\\\\u202e\\\\x9b\\|x\\`&lt;b&gt;.py" in markdown
    assert_markdown_safe(markdown, markdown)
    assert {markdown_cells(line) for line in markdown.splitlines() if line.startswith("| run ")} == {6}
