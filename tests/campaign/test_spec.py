"""Campaign files: every problem found at once, one line each naming the job and the key; and the plan's numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aoe_runner.campaign.plan import Node, plan_campaign
from aoe_runner.campaign.spec import CampaignFileError, load_campaign
from aoe_runner.errors import InputError
from tests.preflight.hosts import make_facts
from tests.tune.runner import SIMULATOR


def campaign(tmp_path: Path, text: str) -> Path:
    (tmp_path / "train.py").write_text("import tensorflow\n", encoding="utf-8")
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_problem_is_one_line_with_its_job_and_key(tmp_path: Path) -> None:
    text = """
[defaults]
mode = "op"
colour = "red"
[[job]]
name = "a"
script = "train.py"
modee = "op"
[[job]]
name = "a"
script = "missing.py"
[[job]]
name = "b"
model = "m.onnx"
script = "train.py"
args = "x"
[[job]]
script = "train.py"
timeout = "soon"
"""
    with pytest.raises(CampaignFileError) as raised:
        load_campaign(campaign(tmp_path, text))
    lines = raised.value.message.splitlines()
    where = str(tmp_path / "c.toml")
    assert all(line.startswith(f"{where}: ") for line in lines)
    said = [line.removeprefix(f"{where}: ") for line in lines]
    assert "[defaults]: unknown key 'colour'" in said
    assert "job 1 (a): modee: unknown key" in said
    assert f"job 2 (a): script: {tmp_path / 'missing.py'}: no such file" in said
    assert "job 3 (b): model: a job tunes a script or a model, not both" in said
    assert "job 3 (b): args: not a list of strings" in said
    assert "job 4: name: required, and a name (letters, digits, . _ - and spaces)" in said
    assert any(line.startswith("job 4: timeout: ") for line in said)


@pytest.mark.parametrize(
    ("jobs", "says"),
    [
        ('[[job]]\nname = "a"\nafter = ["z"]\n', "job 'a': after: 'z' is no job of this campaign"),
        ('[[job]]\nname = "a"\nafter = ["b"]\n[[job]]\nname = "b"\nafter = ["a"]\n', "wait on each other (a cycle)"),
        ('[[job]]\nname = "a"\n[[job]]\nname = "a"\n', "'a' is the name of an earlier job"),
    ],
)
def test_after_must_name_jobs_without_a_cycle(tmp_path: Path, jobs: str, says: str) -> None:
    with pytest.raises(CampaignFileError, match=says.replace("(", r"\(").replace(")", r"\)")):
        load_campaign(campaign(tmp_path, f'[defaults]\nmode = "op"\nscript = "train.py"\n{jobs}'))


def test_a_file_that_is_not_toml_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not TOML"):
        load_campaign(campaign(tmp_path, "[[job]\n"))


def test_the_plan_asks_each_job_for_its_scenarios_formula_and_refuses_what_fits_nowhere(tmp_path: Path) -> None:
    text = f"""
[defaults]
script = "{SIMULATOR}"
[[job]]
name = "ops"
mode = "op"
model_memory = "4GiB"
[[job]]
name = "subgraphs"
mode = "subgraph"
[[job]]
name = "huge"
mode = "op"
model_memory = "1TiB"
"""
    found = load_campaign(campaign(tmp_path, text))
    nodes = [Node("a", 100, 64 * 2**30, 2), Node("b", 200, 128 * 2**30, 0)]
    plan = plan_campaign(found, make_facts(cpus=100), nodes)
    needs = {need.job: need for need in plan.needs}
    assert (needs["ops"].cpus, needs["ops"].memory_bytes, needs["ops"].fits_on) == (74, 32 * 2**30, ("a",))
    assert (needs["subgraphs"].cpus, needs["subgraphs"].fits_on) == (24, ("a",))  # b has no NPU
    assert (
        needs["huge"].problem is not None
        and "8192.0 GiB (model memory 1024.0 GiB x TUNING_PARALLEL_NUM 8)" in needs["huge"].problem
    )


def test_check_prints_the_plan_in_every_format(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    path = campaign(tmp_path, f'[[job]]\nname = "j"\nmode = "op"\nscript = "{SIMULATOR}"\n')
    table = cli("campaign", "check", str(path), "--npus", "1", "--cpus", "100")
    assert table.code == 0 and "j    training, tf  74" in table.out
    assert json.loads(cli("campaign", "check", str(path), "--npus", "1", "--cpus", "100", "--json").out)["jobs"][0]["cpus"] == 74
    assert cli("campaign", "check", str(path), "--npus", "0", "-f", "csv").code == 1  # no NPU: fits nowhere
    assert "| j " in cli("campaign", "check", str(path), "--npus", "1", "-f", "markdown").out


def test_the_live_line_counts_jobs_and_names_each_running_one() -> None:
    from aoe_runner.campaign.record import Attempt, CampaignRecord, JobRecord, JobState, now
    from aoe_runner.common.safe_text import visible
    from aoe_runner.render.campaign_progress import status_line

    record = CampaignRecord(
        id="x", name="n", file="f", file_sha256="0" * 64, text="", host="h", supervisor_pid=1, started_at=now()
    )
    record.jobs += [
        JobRecord(name="a\x1b[2Jforged", fingerprint="", state=JobState.RUNNING,
                  attempts=[Attempt(number=1, host="node-1", device="3", started_at=now(), last_result_file="aoe_result_1.json")]),
        JobRecord(name="b", fingerprint="", state=JobState.SUCCEEDED),
        JobRecord(name="c", fingerprint="", state=JobState.PENDING),
        JobRecord(name="d", fingerprint="", state=JobState.FAILED),
    ]  # fmt: skip
    line = visible(status_line(record))
    assert line.startswith("1 pending, 1 running, 1 done, 1 failed; a")
    assert "on node-1 device 3 0s, aoe_result_1.json" in line and "\x1b" not in line


def test_a_campaigns_page_shows_its_jobs_over_time_with_every_name_escaped(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    import os

    from aoe_runner.campaign.record import Attempt, CampaignRecord, CampaignStore, JobRecord, JobState, now

    record = CampaignRecord(
        id="20261127-100000-cccccccc", name="n", file="f", file_sha256="0" * 64, text="", host="h", supervisor_pid=1,
        started_at=now(), ended_at=now(),
    )  # fmt: skip
    record.jobs.append(
        JobRecord(name="<script>alert(1)</script>", fingerprint="", state=JobState.SUCCEEDED,
                  attempts=[Attempt(number=1, host="node-1", device="0", run="r1", started_at=now(), ended_at=now())])
    )  # fmt: skip
    CampaignStore(Path(os.environ["AOE_RUNNER_HOME"])).save(record)
    page = tmp_path / "page.html"
    done = cli("campaign", "status", "-f", "html", "-o", str(page))
    assert done.code == 0, done.err
    text = page.read_text(encoding="utf-8")
    assert "Jobs over time, per host and device" in text and "node-1 / device 0" in text
    assert "<script>alert(1)</script>" not in text


def test_every_problem_at_once_each_on_its_own_line(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    text = (
        '[defaults]\nmode = "op"\nscript = "train.py"\n[[job]]\nname = "a"\nmodee = 1\n'
        '[[job]]\nname = "b"\nafter = ["nope"]\n[[job]]\nname = "b"\n'
        '[[job]]\nname = "c"\nafter = ["d"]\n[[job]]\nname = "d"\nafter = ["c"]\n'
    )
    done = cli("campaign", "check", str(campaign(tmp_path, text)))
    assert done.code == 4
    lines = done.err.splitlines()
    assert len(lines) == 4 and all(line.startswith("error: ") and "\\\\n" not in line for line in lines), lines
    said = "\n".join(lines)
    assert "modee: unknown key" in said and "'nope' is no job" in said and "earlier job" in said and "a cycle" in said


def test_a_cluster_address_nothing_answers_on_is_one_line_at_once(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    path = campaign(tmp_path, f'[[job]]\nname = "j"\nmode = "op"\nscript = "{SIMULATOR}"\n')
    done = cli("campaign", "check", str(path), "--address", "127.0.0.1:9")
    assert done.code == 4 and "no Ray cluster answers there" in done.err
    assert cli("campaign", "run", str(path), "--address", "127.0.0.1:9", "--cpus", "4").code == 2
    assert cli("campaign", "run", str(path), "--skip", "nosuchcheck").code == 2
