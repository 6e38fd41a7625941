"""Campaigns in the shared PostgreSQL store: a campaign recorded on one host is listed from another, and a store
that cannot be reached leaves the record on the host that ran it, with one warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aoe_runner.campaign.record import CampaignRecord, CampaignStore, JobRecord, JobState, now
from aoe_runner.common.jsontext import dump_json
from aoe_runner.store.pg_index import PgIndex
from tests.store.conftest import SharedHome
from tests.tune.runner import SIMULATOR, aoe_runner


def _record(campaign_id: str) -> CampaignRecord:
    record = CampaignRecord(
        id=campaign_id, name="models", file="/x/models.toml", file_sha256="0" * 64, text="", host="npu-host-01",
        supervisor_pid=1, started_at=now(), ended_at=now(),
    )  # fmt: skip
    record.jobs.append(JobRecord(name="resnet", fingerprint="f" * 64, state=JobState.SUCCEEDED))
    return record


def test_a_campaign_recorded_on_one_host_is_listed_from_another(tmp_path: Path, pg_url: str) -> None:
    one = CampaignStore(tmp_path / "one", PgIndex(pg_url, "the store"))
    one.save(_record("20261127-100000-aaaaaaaa"))
    other = SharedHome(tmp_path / "other", pg_url)  # another home: it holds no campaign of its own
    listed = aoe_runner(other, "campaign", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(row["campaign"], row["succeeded"]) for row in json.loads(listed.stdout)] == [("20261127-100000-aaaaaaaa", 1)]
    shown = aoe_runner(other, "campaign", "status", "2026112", "--json")
    assert json.loads(shown.stdout)["jobs"][0]["name"] == "resnet"


def test_a_store_that_cannot_be_reached_keeps_the_campaign_here(tmp_path: Path) -> None:
    warnings: list[str] = []
    store = CampaignStore(tmp_path, PgIndex("postgresql://aoe@127.0.0.1:9/aoe", "the store"), warnings.append)
    record = _record("20261127-100000-bbbbbbbb")
    store.save(record)
    store.save(record)  # said once
    assert len(warnings) == 1 and "recorded on this host only" in warnings[0]
    assert (tmp_path / "campaigns" / record.id / "campaign.json").read_text() == dump_json(record)


@pytest.mark.slow  # an embedded Ray starts in seconds
def test_every_run_of_a_campaign_on_ray_reaches_the_shared_store(tmp_path: Path, pg_url: str) -> None:
    pytest.importorskip("ray")
    ran = SharedHome(tmp_path / "ran", pg_url)
    jobs = "".join(f'[[job]]\nname = "j{n}"\nargs = ["sleep", "0"]\n' for n in range(2))
    path = tmp_path / "models.toml"
    path.write_text(f'name = "models"\n[defaults]\nmode = "op"\nscript = "{SIMULATOR}"\n{jobs}', encoding="utf-8")
    done = aoe_runner(ran, "campaign", "run", str(path), "--cpus", "160", "--npus", "2", "--force")
    assert done.returncode == 0, done.stderr
    other = SharedHome(tmp_path / "other", pg_url)  # another host: it sees what the store holds, nothing of ran's own
    (campaign,) = json.loads(aoe_runner(other, "campaign", "list", "--json").stdout)
    shown = json.loads(aoe_runner(other, "campaign", "status", campaign["campaign"], "--json").stdout)
    runs = {job["attempts"][-1]["run"] for job in shown["jobs"]}
    listed = aoe_runner(other, "runs", "list", "--json")
    assert len(runs) == 2 and runs <= {json.loads(line)["id"] for line in listed.stdout.splitlines()}
