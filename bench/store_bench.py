"""The shared run store on PostgreSQL: 20 hosts writing at once, `runs list` over 100,000 runs, and a
server killed in the middle of a run. Run alone with `python bench/store_bench.py` (prints its section for
docs/benchmarks.md); it starts its own server in a temporary directory (Debian's initdb and pg_ctl, as for the tests).

- Writers: 20 processes, each posing as a host, record 500 runs each (10,000) the way `tune` records one: the
  local manifest and index, then the shared store, at the start and at the end of each run. Counted afterwards: runs
  lost and runs duplicated. Timed: all of it (wall, and the writers' CPU), and each writer's own wall time.
- `runs list`: 100,000 runs of 20 hosts and 3 SoCs, made inside the server from a real manifest; the newest 20 as
  `aoe-runner runs list` prints them (a fresh process: interpreter, psycopg, connection, query, table), and the
  query alone (a fresh connection each round), unfiltered and with --host and --soc.
- Fault: `tune` of the simulator, the server killed (`pg_ctl stop -m immediate`) after its first report; the run
  must finish and record locally, and `runs push` after the restart must make the shared history whole.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from aoe_runner.runs.index import RunFilter  # noqa: E402
from aoe_runner.store.pg_index import PgIndex  # noqa: E402
from tests.store.pg_server import PgServer  # noqa: E402

SIMULATOR = ROOT / "tests" / "simulator" / "train.py"
WRITERS, RUNS_EACH = 20, 500
LISTED_RUNS = 100_000
LIST_ROUNDS = 15
Timing = tuple[float, float]  # (wall, cpu) seconds


@dataclass
class StoreFigures:
    written: int
    lost: int
    duplicated: int
    writers_wall: float
    writers_cpu: float
    writer_walls: list[float]
    cli_list: list[Timing]
    local_list: list[Timing]
    query: dict[str, list[float]]
    fault: dict[str, object]
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]


def measure() -> StoreFigures:
    load_before = os.getloadavg()
    server = PgServer.create()
    server.start()
    try:
        with tempfile.TemporaryDirectory(prefix="aoe-store-bench-") as scratch_name:
            scratch = Path(scratch_name)
            template = _template(scratch)
            server.sql("CREATE DATABASE listed")  # first: the writers' load would still weigh on it afterwards
            _fill(server.url("listed"), template)
            cli = [_cli_list(server.url("listed"), scratch) for _ in range(LIST_ROUNDS)]
            local = [_cli_list("local", scratch, name="template", lines=3) for _ in range(LIST_ROUNDS)]
            query = {name: _query(server.url("listed"), where) for name, where in _FILTERS.items()}
            server.sql("CREATE DATABASE writers")
            written, lost, duplicated, wall, cpu, walls = _writers(server.url("writers"), scratch, template)
            server.sql("CREATE DATABASE fault")
            fault = _fault(server, scratch)
    finally:
        server.remove()
    return StoreFigures(written, lost, duplicated, wall, cpu, walls, cli, local, query, fault, load_before, os.getloadavg())


_FILTERS = {
    "newest 20": RunFilter(limit=20),
    "newest 20 of one host (--host)": RunFilter(limit=20, host="host-07"),
    "newest 20 on one SoC (--soc)": RunFilter(limit=20, soc="Ascend910B4"),
}


def _env(scratch: Path, url: str, name: str) -> dict[str, str]:
    return {
        **os.environ,
        "AOE_RUNNER_HOME": str(scratch / name / "home"),
        "AOE_RUNNER_LOCK_DIR": str(scratch / name / "locks"),
        "AOE_RUNNER_STORE": url,
        "PYTHONPATH": str(ROOT),
    }


def _template(scratch: Path) -> Path:
    """A real run's manifest: one tune of the simulator in a local home."""
    env = {**_env(scratch, "local", "template")}
    command = [sys.executable, "-m", "aoe_runner", "tune", str(SIMULATOR), "--mode", "op", "--force", "--", "progress"]
    subprocess.run([*command, "--reports", "2", "--interval", "0.05"], env=env, check=True, capture_output=True)
    (manifest,) = (scratch / "template" / "home" / "runs").glob("*/manifest.json")
    return manifest


def _writers(url: str, scratch: Path, template: Path) -> tuple[int, int, int, float, float, list[float]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.store.writer", url, f"host-{n:02d}", str(RUNS_EACH), str(scratch / f"w{n}"),
             str(template)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for n in range(WRITERS)
    ]  # fmt: skip
    ids: list[str] = []
    walls: list[float] = []
    for process in processes:
        out, err = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"a writer failed: {err}")
        walls.append(float(err.strip().splitlines()[-1].split()[1]))  # the writer's own `elapsed SECONDS`
        ids += out.split()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    stored = [row[0] for row in PgIndex(url, "writers").query("SELECT id FROM runs", [])]
    lost = len(set(ids) - set(stored))
    duplicated = len(stored) - len(set(stored)) + len(ids) - len(set(ids))
    return len(stored), lost, duplicated, wall, cpu, walls


def _fill(url: str, template: Path) -> None:
    """100,000 runs of 20 hosts and 3 SoCs, one per second, made by the server from one real manifest."""
    import psycopg

    index = PgIndex(url, "listed")
    index.check_writable()  # creates the schema
    index.close()
    manifest = template.read_text()
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(
            """
        INSERT INTO runs (id, started_at, ended_at, status, kind, mode, script, script_name, device, exit_code,
                          result_files, cann_version, soc, host, artifacts, manifest)
        SELECT to_char(t, 'YYYYMMDD-HH24MISS') || '-' || lpad(to_hex(g), 8, '0'), t, t + interval '1 minute',
               'succeeded', 'tune', 'op', '/home/me/bert/train.py', 'train.py', mod(g, 8), 0, 1, '8.1.RC1',
               (ARRAY['Ascend910B3', 'Ascend910B4', 'Ascend910_9392'])[mod(g, 3) + 1], 'host-' || lpad(mod(g, 20)::text, 2, '0'),
               NULL, %s::jsonb
        FROM generate_series(1, %s) AS g, LATERAL (SELECT timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second') AS s(t)
        """,
            [manifest, LISTED_RUNS],
        )
        db.execute("ANALYZE runs")


def _cli_list(url: str, scratch: Path, name: str = "lister", lines: int = 22) -> Timing:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "runs", "list"], env=_env(scratch, url, name), capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or len(done.stdout.splitlines()) != lines:
        raise SystemExit(f"runs list failed: {done.stderr}")
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _query(url: str, where: RunFilter) -> list[float]:
    walls = []
    for _ in range(LIST_ROUNDS):
        start = time.perf_counter()
        index = PgIndex(url, "listed")
        rows = index.rows(where)
        walls.append(time.perf_counter() - start)
        index.close()
        assert len(rows) == 20
    return walls


def _fault(server: PgServer, scratch: Path) -> dict[str, object]:
    env = _env(scratch, server.url("fault"), "fault")
    (scratch / "fault").mkdir()
    command = [sys.executable, "-m", "aoe_runner", "tune", str(SIMULATOR), "--mode", "op", "--force", "--", "progress"]
    process = subprocess.Popen(
        [*command, "--reports", "4", "--interval", "0.5"], env=env, cwd=scratch / "fault", stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    seen = ""
    while "step 1.0:" not in seen:
        seen += process.stdout.readline()
    server.stop("immediate")
    _, err = process.communicate()
    server.start()
    index = PgIndex(server.url("fault"), "fault")
    before_push = index.query("SELECT status FROM runs", [])
    start = time.perf_counter()
    pushed = subprocess.run([sys.executable, "-m", "aoe_runner", "runs", "push"], env=env, capture_output=True, text=True)
    push_s = time.perf_counter() - start
    again = subprocess.run([sys.executable, "-m", "aoe_runner", "runs", "push"], env=env, capture_output=True, text=True)
    local = json.loads(next((scratch / "fault" / "home" / "runs").glob("*/manifest.json")).read_text())
    after_push = PgIndex(server.url("fault"), "fault").query("SELECT status, manifest FROM runs", [])
    return {
        "tune_exit": process.returncode,
        "warned": "recorded on this host only" in err,
        "before_push": [row[0] for row in before_push],
        "push_s": push_s,
        "pushed": pushed.stderr.strip(),
        "again": again.stderr.strip(),
        "whole": len(after_push) == 1 and after_push[0][1] == local,
        "after_push": [row[0] for row in after_push],
    }


def render(f: StoreFigures) -> str:
    cli_cpu = statistics.median(cpu for _, cpu in f.cli_list)
    local_cpu = statistics.median(cpu for _, cpu in f.local_list)
    fault = f.fault
    rows = [
        (f"{WRITERS} writer processes (one per host) x {RUNS_EACH} runs, recorded as `tune` records them",
         f"{f.written:,} runs in {f.writers_wall:.1f} s wall, {f.writers_cpu:.1f} s CPU of the writers "
         f"({f.written / f.writers_wall:.0f} runs/s)", ""),
        ("runs lost / duplicated", f"{f.lost} / {f.duplicated}", "0 / 0"),
        (f"one writer's wall time (median of {len(f.writer_walls)})", _spread(f.writer_walls, 1, "s"), ""),
        (f"`runs list` over {LISTED_RUNS:,} runs, newest 20: the store's query, from a fresh connection",
         _spread(f.query["newest 20"], 1000, "ms"), "≤ 300 ms"),
        *((f"the same, {name}", _spread(walls, 1000, "ms"), "≤ 300 ms") for name, walls in list(f.query.items())[1:]),
        (f"`aoe-runner runs list`, a fresh process, shared store of {LISTED_RUNS:,} runs",
         f"{_spread([w for w, _ in f.cli_list], 1000, 'ms')}, {cli_cpu * 1000:.0f} ms CPU", "≤ 300 ms"),
        ("baseline: `aoe-runner --store local runs list`, a fresh process, 1 local run",
         f"{_spread([w for w, _ in f.local_list], 1000, 'ms')}, {local_cpu * 1000:.0f} ms CPU", ""),
        ("fault: `tune` with the server killed after the first of its 4 reports",
         f"exit {fault['tune_exit']}; warned that it recorded locally: {_yes(fault['warned'])}; "
         f"the store held it as {', '.join(map(str, fault['before_push']))}", "the run finishes"),
        ("then, server back, `runs push`",
         f"{float(fault['push_s']) * 1000:.0f} ms, \"{fault['pushed']}\"; the store's manifest equals the local one: "
         f"{_yes(fault['whole'])}", "history whole"),
        ("`runs push` again", f"\"{fault['again']}\"", "sends nothing"),
    ]  # fmt: skip
    table = "\n".join(f"| {what} | {figure} | {target} |" for what, figure, target in rows)
    return f"""## The shared run store on PostgreSQL

Measured by `python bench/run.py --only store` (bench/store_bench.py; its writers load both CPUs for a minute or
more): PostgreSQL {_server_version()} in a temporary directory on a Unix socket (fsync off, as in the tests),
psycopg {_psycopg_version()} (binary), this 2-CPU machine shared with other work. Load average before
{_load(f.load_before)}, after {_load(f.load_after)}; the `runs list` rounds run first, before the writers load the
machine. Times are medians of {LIST_ROUNDS} rounds with min-max, where a figure has rounds; the writers and the fault
ran once.

| | figure | target |
|---|---|---|
{table}

A writer's run is two shared-store transactions (start, end), two atomic manifest writes with fsync, a 256 KiB
reserve and two local SQLite upserts; 20 writers share 2 CPUs with the server, so the figure is CPU-bound, not
lock-bound. The query is `ORDER BY started_at DESC, id DESC LIMIT 20` on the `runs_by_start` index (`runs_by_host`,
`runs_by_soc` with a filter), and includes opening the connection and checking the schema version. The fresh
process adds what every command pays (interpreter, typer, the manifest models) and psycopg's import (about
140-190 ms here, measured with `python -X importtime -c "import psycopg"`): the local baseline row shows the rest.
"""


def _spread(values: list[float], scale: float, unit: str) -> str:
    low, mid, high = min(values) * scale, statistics.median(values) * scale, max(values) * scale
    digits = 0 if unit == "ms" else 1
    return f"{mid:.{digits}f} {unit} (min-max {low:.{digits}f}-{high:.{digits}f})"


def _yes(value: object) -> str:
    return "yes" if value else "NO"


def _server_version() -> str:
    """`pg_ctl (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)` as `15.18 (Debian 15.18-0+deb12u1)`."""
    from tests.store.pg_server import server_binaries

    binaries = server_binaries()
    if binaries is None:
        return "?"
    text = subprocess.run([str(binaries / "pg_ctl"), "--version"], capture_output=True, text=True).stdout.strip()
    return text.split("(PostgreSQL)", 1)[-1].strip()


def _psycopg_version() -> str:
    import psycopg

    return psycopg.__version__


def _load(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.2f}" for value in load)


if __name__ == "__main__":
    print(render(measure()))
