"""One campaign job on the node Ray chose: the ordinary `aoe-runner tune`, as a subprocess, with the device Ray gave.

Runs inside a Ray worker (ray_engine.py submits it); it never imports Ray. What it learns (its host, device, run
id, last result file, how it ended) goes to the campaign's board through `tell`, an actor method Ray calls for it.
Ray's cancellation raises KeyboardInterrupt here: the tune then gets SIGINT, stops its script within its --grace
and records the run as interrupted, and this task waits for that before it ends. Should the worker itself die,
the kernel kills the tune (its parent-death signal) and tune's own watchdog ends the script's processes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from aoe_runner.common.home import runner_home
from aoe_runner.common.lifeline import die_with_this_process

POLL_S = 1.0
STOP_MARGIN_S = 30.0  # beyond the job's --grace, before a tune that will not end is killed


def run_job(
    argv: list[str], env: dict[str, str], cwd: str, grace_s: float, link: dict[str, Any], tell: Callable[..., Any]
) -> int:
    """Run `aoe-runner ARGV` for the campaign job `link` (campaign, job, attempt); its exit code."""
    devices = os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "")
    environment = {**os.environ, **env, "AOE_RUNNER_CAMPAIGN": json.dumps(link)}
    home = runner_home() if not environment.get("AOE_RUNNER_HOME") else Path(environment["AOE_RUNNER_HOME"])
    started = time.time()
    tell("started", link, host=socket.gethostname(), device=devices or None, pid=os.getpid())
    errors = tempfile.TemporaryFile()  # the tune's stderr (quiet: its errors and warnings), for why it failed
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "aoe_runner", "-q", *argv],
            env=environment,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            preexec_fn=_child_setup(),
        )
    except OSError as error:
        errors.close()
        tell("ended", link, code=None, problem=f"cannot start aoe-runner: {error.strerror or error}")
        return 4
    run: str | None = None
    try:
        while process.poll() is None:
            run = run or _find_run(home, link, started)
            tell("progress", link, run=run, last_result_file=_last_result(home, run))
            try:
                process.wait(POLL_S)
            except subprocess.TimeoutExpired:
                continue
    except KeyboardInterrupt:  # Ray's cancellation
        _stop(process, grace_s)
    problem = _last_error(errors) if process.returncode not in (0, 130) else None
    for _ in range(3):  # what the campaign records: said even if a late cancellation interrupts the first try
        try:
            run = run or _find_run(home, link, started)
            news = {"problem": problem} if problem else {}
            tell("ended", link, code=process.returncode, run=run, last_result_file=_last_result(home, run), **news)
            break
        except KeyboardInterrupt:
            continue
    return process.returncode


def _last_error(errors: IO[bytes], tail: int = 4096) -> str | None:
    """The tune's last line on stderr (its "error: ..." line when it refused to start), at most 300 characters."""
    try:
        with errors:
            size = errors.seek(0, os.SEEK_END)
            errors.seek(max(size - tail, 0))
            lines = [line.strip() for line in errors.read().decode("utf-8", "replace").splitlines() if line.strip()]
    except OSError:
        return None
    return lines[-1][:300] if lines else None


def _child_setup() -> Callable[[], None]:
    """In the tune, before it starts: no signal blocked (a Ray worker blocks SIGINT, and a blocked signal stays
    blocked across exec: the tune would never see the cancellation's SIGINT), none ignored (tune respects an ignored
    SIGINT as it does under nohup), and death with this worker."""
    lifeline = die_with_this_process()

    def setup() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)
        if lifeline is not None:
            lifeline()

    return setup


def _stop(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGINT, as Ctrl-C would give it, then wait for the tune to record its run (another cancellation does not cut
    that short); SIGKILL when it has not ended well after its grace."""
    process.send_signal(signal.SIGINT)
    deadline = time.monotonic() + grace_s + STOP_MARGIN_S
    while process.poll() is None:
        try:
            process.wait(max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            process.kill()
        except KeyboardInterrupt:
            continue


def _find_run(home: Path, link: dict[str, Any], since: float) -> str | None:
    """The run this job's tune recorded: a run directory made since it started whose manifest names the link."""
    runs = home / "runs"
    try:
        candidates = [entry for entry in os.scandir(runs) if entry.is_dir() and entry.stat().st_mtime >= since - 5]
    except OSError:
        return None
    for entry in sorted(candidates, key=lambda entry: entry.name, reverse=True):
        try:
            manifest = json.loads(Path(entry.path, "manifest.json").read_bytes())
        except (OSError, ValueError):
            continue
        found = manifest.get("campaign") or {}
        if (found.get("campaign"), found.get("job"), found.get("attempt")) == (link["campaign"], link["job"], link["attempt"]):
            return entry.name
    return None


def _last_result(home: Path, run: str | None) -> str | None:
    if run is None:
        return None
    try:
        work = Path(json.loads((home / "runs" / run / "manifest.json").read_bytes())["work_dir"])
        found = [p for directory in (work, work / "aoe_data") for p in directory.glob("aoe_result_*.json") if p.is_file()]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return max(found, key=lambda path: path.stat().st_mtime).name if found else None
