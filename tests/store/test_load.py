"""Many hosts writing one store at once: 20 writer processes, each posing as a host, record runs as `tune` does;
none is lost, none duplicated. bench/store_bench.py runs the same writers for 10,000 runs and times it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg

from aoe_runner.common.jsontext import dump_json
from aoe_runner.runs.manifest import RunManifest
from tests.conftest import ROOT

WRITERS = 20
RUNS_EACH = 25


def start_writers(url: str, root: Path, template: RunManifest, writers: int, each: int) -> list[subprocess.Popen[str]]:
    path = root / "template.json"
    path.write_text(dump_json(template))
    return [
        subprocess.Popen(
            [sys.executable, "-m", "tests.store.writer", url, f"host-{n:02d}", str(each), str(root / f"home-{n:02d}"), str(path)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(writers)
    ]


def test_twenty_hosts_writing_at_once_lose_and_duplicate_nothing(tmp_path: Path, pg_url: str, template: RunManifest) -> None:
    writers = start_writers(pg_url, tmp_path, template, WRITERS, RUNS_EACH)
    written: list[str] = []
    for writer in writers:
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
        written += out.split()
    assert len(written) == len(set(written)) == WRITERS * RUNS_EACH
    with psycopg.connect(pg_url) as db:
        stored = [row[0] for row in db.execute("SELECT id FROM runs WHERE status = 'succeeded'")]
        per_host = db.execute("SELECT host, count(*) FROM runs GROUP BY host ORDER BY host").fetchall()
    assert sorted(stored) == sorted(written)
    assert per_host == [(f"host-{n:02d}", RUNS_EACH) for n in range(WRITERS)]
