"""A campaign's record: the file it ran, each job's fingerprint, attempts (run, host, device, timings) and state.

Kept in `$AOE_RUNNER_HOME/campaigns/<id>/campaign.json`, written whole and renamed into place at every change, so a
crash or Ctrl-C leaves the last complete version. A job's fingerprint is what makes a second run of the campaign
skip it: the content hash of its script (or model), its arguments, mode and framework, and this host's SoC and
CANN version.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Protocol

from aoe_runner.campaign.spec import Campaign, Job
from aoe_runner.common.files import atomic_write_text
from aoe_runner.common.jsontext import dump_json, load_json
from aoe_runner.common.plain_data import FIELD_DOCSTRINGS
from aoe_runner.common.regular_files import read_with_status
from aoe_runner.errors import InputError
from aoe_runner.frameworks.kinds import Framework
from aoe_runner.runs.bank import sha256_of

RECORD_NAME = "campaign.json"
MAX_RECORD_BYTES = 64 * 2**20


class JobState(str, Enum):
    PENDING = "pending"  # not started yet
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # its tune exited with another code than 0
    STOPPED = "stopped"  # Ctrl-C or SIGTERM stopped it, or the campaign stopped at a failure (--fail-fast)
    SKIPPED = "skipped"  # not run: done before with the same fingerprint, or a job it waits for did not succeed
    LOST = "lost"  # its node died and no retry was left


DONE = (JobState.SUCCEEDED, JobState.FAILED, JobState.STOPPED, JobState.SKIPPED, JobState.LOST)


@dataclass(kw_only=True)
class Attempt:
    """One start of a job's tune on a node."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    number: int
    host: str | None = None
    node: str | None = None
    """Ray's id of the node it ran on."""
    device: str | None = None
    """The physical device Ray gave it (ASCEND_RT_VISIBLE_DEVICES)."""
    run: str | None = None
    """The tune's run id, in the history of `host`."""
    started_at: datetime | None = None
    ended_at: datetime | None = None
    exit_code: int | None = None
    """What its `aoe-runner tune` exited with."""
    problem: str | None = None
    """Why it ended without an exit code (its node died, it could not start)."""
    last_result_file: str | None = None


@dataclass(kw_only=True)
class JobRecord:
    __pydantic_config__ = FIELD_DOCSTRINGS

    name: str
    fingerprint: str
    framework: str | None = None
    needs: str = ""
    """What it asked Ray for: NPU, CPUs, memory."""
    state: JobState = JobState.PENDING
    why: str | None = None
    """Why it was skipped or stopped."""
    attempts: list[Attempt] = field(default_factory=list)
    earlier_run: str | None = None
    """For a job skipped as done before: the run that did it."""

    @property
    def run(self) -> str | None:
        return self.attempts[-1].run if self.attempts else self.earlier_run


@dataclass(kw_only=True)
class CampaignRecord:
    """`campaign.json`: one run of a campaign file."""

    __pydantic_config__ = FIELD_DOCSTRINGS

    schema_version: int = 1
    id: str
    name: str
    file: str
    file_sha256: str
    text: str
    """The campaign file as it was read."""
    address: str | None = None
    """The Ray cluster it ran on; None: an embedded Ray on this host."""
    host: str
    supervisor_pid: int
    started_at: datetime
    ended_at: datetime | None = None
    stopped_by: str | None = None
    jobs: list[JobRecord] = field(default_factory=list)

    def job(self, name: str) -> JobRecord:
        return next(job for job in self.jobs if job.name == name)

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for job in self.jobs:
            found[job.state.value] = found.get(job.state.value, 0) + 1
        return found

    @property
    def state(self) -> str:
        if self.ended_at is None:
            return "running" if _alive(self.supervisor_pid, self.host) else "abandoned"
        if self.stopped_by:
            return "interrupted"
        return "succeeded" if all(job.state in (JobState.SUCCEEDED, JobState.SKIPPED) for job in self.jobs) else "failed"


def fingerprint(job: Job, framework: Framework | None, soc: str | None, cann: str | None) -> str:
    """What must be the same for a succeeded job not to run again: what it tunes (content), how (arguments, mode,
    framework, bank, environment, interpreter, operator list and weight contents) and on what (SoC, CANN)."""
    parts = {
        "target": sha256_of(job.target),
        "args": list(job.args),
        "mode": job.mode.value,
        "framework": framework.value if framework else None,
        "soc": soc,
        "cann": cann,
        "bank": str(job.bank) if job.bank else None,
        "env": list(job.env),
        "python": job.python,
        "model_framework": job.model_framework,
        "tune_ops": sha256_of(job.tune_ops) if job.tune_ops else None,
        "weight": sha256_of(job.weight) if job.weight else None,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


class SharedCampaigns(Protocol):
    """The shared run store's campaigns table (store/pg_index.PgIndex)."""

    def record_campaign(
        self, campaign_id: str, name: str, host: str, started_at: str, ended_at: str | None, text: str
    ) -> None: ...
    def campaign_records(self) -> list[str]: ...


class CampaignStore:
    """The campaigns of one aoe-runner home, and of the shared run store when the home uses one: a record is written
    here first, then sent there (a store that cannot be reached is one warning; the record stays here)."""

    def __init__(self, home: Path, shared: SharedCampaigns | None = None, warn: Callable[[str], None] = lambda m: None) -> None:
        self.root = home / "campaigns"
        self.shared = shared
        self.warn = warn

    def new_id(self, started_at: datetime) -> str:
        return f"{started_at:%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"

    def save(self, record: CampaignRecord) -> None:
        directory = self.root / record.id
        directory.mkdir(parents=True, exist_ok=True)
        text = dump_json(record)
        atomic_write_text(directory / RECORD_NAME, text)
        if self.shared is None:
            return
        ended = record.ended_at.isoformat() if record.ended_at else None
        try:
            self.shared.record_campaign(record.id, record.name, record.host, record.started_at.isoformat(), ended, text)
        except InputError as error:  # StoreUnavailable: said once, the record stays here
            self.warn(f"campaign {record.id} is recorded on this host only: {error.message}")
            self.shared = None

    def load(self, campaign_id: str) -> CampaignRecord:
        if not campaign_id or "/" in campaign_id or campaign_id.startswith("."):
            raise InputError(campaign_id or "''", "not a campaign id")
        path = self.root / campaign_id / RECORD_NAME
        if not path.exists():
            raise InputError(campaign_id, "no such campaign (aoe-runner campaign list shows them)")
        data, _ = read_with_status(str(path), MAX_RECORD_BYTES)
        try:
            return load_json(CampaignRecord, data)
        except ValueError as error:
            raise InputError(str(path), f"not a campaign record: {str(error).splitlines()[0]}") from None

    def all(self) -> Iterator[CampaignRecord | InputError]:
        """Every record, oldest first, this host's and the shared store's; one that cannot be read as its error."""
        found: dict[str, CampaignRecord | InputError] = {}
        try:
            names = sorted(entry.name for entry in os.scandir(self.root) if entry.is_dir(follow_symlinks=False))
        except OSError:
            names = []
        for name in names:
            try:
                found[name] = self.load(name)
            except InputError as error:
                found[name] = error
        for record in self._shared_records():
            found.setdefault(record.id, record)
        yield from sorted(found.values(), key=_started)

    def _shared_records(self) -> list[CampaignRecord]:
        if self.shared is None:
            return []
        try:
            texts = self.shared.campaign_records()
        except InputError as error:
            self.warn(f"the shared store's campaigns are not listed: {error.message}")
            return []
        records = []
        for text in texts:
            try:
                records.append(load_json(CampaignRecord, text))
            except ValueError as error:
                self.warn(f"a campaign in the shared store cannot be read ({str(error).splitlines()[0]}); skipped")
        return records

    def resolve(self, reference: str | None) -> CampaignRecord:
        """An id, a unique prefix of one, `latest` or nothing (the latest)."""
        records = [record for record in self.all() if isinstance(record, CampaignRecord)]
        if not records:
            raise InputError(reference or "latest", "no campaigns are recorded yet")
        if reference in (None, "latest"):
            return records[-1]
        found = [record for record in records if record.id.startswith(reference or "")]
        if len(found) != 1:
            why = "no such campaign" if not found else f"{len(found)} campaigns start so; give more of the id"
            raise InputError(reference or "''", why)
        return found[0]

    def successes(self, name: str) -> dict[tuple[str, str], tuple[str, str | None]]:
        """Per (job, fingerprint), the latest success in the campaigns named `name`: (campaign id, run). One read of
        the records, however many jobs ask."""
        found: dict[tuple[str, str], tuple[str, str | None]] = {}
        for record in self.all():  # oldest first: a later success takes the place of an earlier one
            if not isinstance(record, CampaignRecord) or record.name != name:
                continue
            for done in record.jobs:
                if done.state is JobState.SUCCEEDED:
                    found[(done.name, done.fingerprint)] = (record.id, done.run)
        return found


def _started(record: CampaignRecord | InputError) -> str:
    return record.started_at.isoformat() if isinstance(record, CampaignRecord) else ""


def campaign_store(home: Path, warn: Callable[[str], None]) -> CampaignStore:
    """The campaigns of this home, with the shared run store's when the home uses one."""
    from aoe_runner.store.config import current_choice

    choice = current_choice(home)
    if choice.url is None:
        return CampaignStore(home, None, warn)
    from aoe_runner.store.pg_index import PgIndex

    return CampaignStore(home, PgIndex(choice.url, choice.shown, warn), warn)


def _alive(pid: int, host: str) -> bool:
    """Is the campaign's process still there? Only this host can tell; another host's counts as alive."""
    import socket

    if host != socket.gethostname():
        return True
    if not 0 < pid < 2**22:  # no pid the kernel gives (a hand-edited record)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def now() -> datetime:
    return datetime.now(timezone.utc)


def campaign_record(campaign: Campaign, address: str | None, host: str, started_at: datetime, campaign_id: str) -> CampaignRecord:
    return CampaignRecord(
        id=campaign_id,
        name=campaign.name,
        file=str(campaign.path),
        file_sha256=campaign.sha256,
        text=campaign.text,
        address=address,
        host=host,
        supervisor_pid=os.getpid(),
        started_at=started_at,
    )
