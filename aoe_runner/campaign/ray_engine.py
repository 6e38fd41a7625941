"""Ray as a campaign's engine: the one module of aoe-runner that imports Ray (the `ray` extra).

Each job is a Ray task asking for `NPU: 1`, the CPUs and the memory of its formula (plan.py), so Ray places it on a
node where AOE's documentation says it fits, and sets ASCEND_RT_VISIBLE_DEVICES to the device it gives. A small
actor, the board, hears from every task what it is doing (task.py's `tell`); the campaign reads it to record and
show the jobs. A task whose node dies is retried by Ray on another node, up to `retries` times.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aoe_runner.campaign.plan import JobNeeds, Node
from aoe_runner.campaign.runner import Submission
from aoe_runner.common.quantities import ascii_digits
from aoe_runner.errors import InputError, UsageError

EXTRA = "pip install 'aoe-runner[ray]'"
REACH_TIMEOUT_S = 5.0


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError("ray", f"not installed: campaigns run on Ray ({EXTRA})") from None
    return ray


def _reachable(address: str) -> None:
    """A `HOST:PORT` that nothing answers on is one line at once (exit 4): Ray itself would wait for minutes."""
    import socket

    host, _, port = address.rpartition(":")
    if not host or not ascii_digits(port) or "://" in address:
        return  # `auto`, `ray://...`: Ray's own to resolve
    try:
        socket.create_connection((host, int(port)), timeout=REACH_TIMEOUT_S).close()
    except OSError as error:
        raise InputError(f"--address {address}", f"no Ray cluster answers there: {error.strerror or error}") from None


def _quiet(ray: Any) -> None:
    """No Ray log line on the terminal (a worker that died, a task that was cancelled): the campaign says what
    happened to each job; Ray's session logs keep the rest."""
    import logging

    logger = logging.getLogger("ray")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.addHandler(logging.NullHandler())
    logger.propagate = False


@contextmanager
def _our_signal_handlers() -> Iterator[None]:
    """Ray's start installs its own SIGTERM handler (it logs and exits 1): aoe-runner's come back once it is done, so
    SIGTERM and SIGHUP still stop a campaign as Ctrl-C does (exit 130, every run recorded)."""
    import signal

    saved = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in saved.items():
            if handler is not None:
                signal.signal(number, handler)


@contextmanager
def _stderr_to(log: Path) -> Iterator[None]:
    """Ray's own lines (a failed NPU-type probe prints a traceback) into `log`, not onto the terminal: the processes
    Ray starts meanwhile inherit it, and so write there from then on too."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        os.dup2(target, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


@dataclass
class Board:
    """What the tasks told, by (job, attempt); a Ray actor (made with ray.remote in RayEngine)."""

    heard: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)

    numbers: dict[str, dict[str, int]] = field(default_factory=dict)  # job -> attempt token -> its number

    def tell(self, kind: str, link: dict[str, Any], **news: Any) -> None:
        """News of one attempt; attempts are numbered per job in the order their first news arrives."""
        tokens = self.numbers.setdefault(link["job"], {})
        number = tokens.setdefault(str(link["attempt"]), len(tokens) + 1)
        entry = self.heard.setdefault(link["job"], {}).setdefault(number, {})
        entry.update({key: value for key, value in news.items() if value is not None})
        if kind == "started":
            entry["started_at"] = time.time()
        elif kind == "ended":
            entry["ended_at"] = time.time()
            entry["code"] = news.get("code")

    def snapshot(self) -> dict[str, dict[int, dict[str, Any]]]:
        return self.heard


def _job(argv: list[str], env: dict[str, str], cwd: str, grace_s: float, link: dict[str, Any], board: Any) -> int:
    """The Ray task: task.run_job, its attempt named by a token of its own. Nothing here waits on Ray (ray.get in a
    task lends its CPUs to other tasks meanwhile, and a node would then run more jobs than their formulas allow):
    the board numbers the attempts as their news arrives."""
    import uuid

    ray = _ray()
    from aoe_runner.campaign.task import run_job

    link = {**link, "attempt": uuid.uuid4().hex}
    node = ray.get_runtime_context().get_node_id()

    def tell(kind: str, link: dict[str, Any], **news: Any) -> None:
        board.tell.remote(kind, link, **({"node": node, **news} if kind == "started" else news))

    return run_job(argv, env, cwd, grace_s, link, tell)


class RayEngine:
    def __init__(self, address: str | None, cpus: int | None, npus: int | None, memory_bytes: int | None, log: Path) -> None:
        """Connect to the cluster at `address`, or start one embedded on this host: its CPUs, memory and NPUs as
        measured, unless given (`--cpus`, `--npus`, `--memory` declare what it offers). Ray's own output goes to
        `log`."""
        ray = self.ray = _ray()
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if address:
            if any(value is not None for value in (cpus, npus, memory_bytes)):
                raise UsageError("--cpus, --npus and --memory declare an embedded Ray; a cluster's nodes declare their own")
            _reachable(address)
            arguments: dict[str, Any] = {"address": address, **options}
        else:
            resources = {"NPU": float(npus)} if npus is not None else None
            arguments = {"num_cpus": cpus, "resources": resources, "_memory": memory_bytes, **options}
        try:
            with _stderr_to(log), _our_signal_handlers():
                ray.init(**arguments)
        except KeyboardInterrupt:  # a signal while Ray starts: undo the start
            ray.shutdown()
            raise
        except SystemExit:  # Ray's own SIGTERM handler exits
            ray.shutdown()
            raise KeyboardInterrupt("SIGTERM") from None
        _quiet(ray)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        self.board = ray.remote(num_cpus=0, scheduling_strategy=here)(Board).remote()  # on this node: it outlives a job's
        self._heard: dict[str, dict[int, dict[str, Any]]] = {}
        self.remote_job = ray.remote(_job)

    def nodes(self) -> list[Node]:
        found = []
        for node in self.ray.nodes():
            if not node.get("Alive"):
                continue
            resources = node.get("Resources", {})
            name = node.get("NodeManagerHostname") or node.get("NodeManagerAddress") or node.get("NodeID", "?")
            found.append(
                Node(
                    f"{name} ({node.get('NodeID', '')[:8]})",
                    resources.get("CPU", 0),
                    int(resources.get("memory", 0)),
                    resources.get("NPU", 0),
                )
            )
        return found

    def submit(self, needs: JobNeeds, submission: Submission) -> Any:
        link = submission.link
        task = self.remote_job.options(
            num_cpus=needs.cpus,
            memory=needs.memory_bytes or None,
            resources={"NPU": 1},
            max_retries=submission.retries,
            retry_exceptions=False,
            name=f"aoe-runner campaign {link['campaign']} job {link['job']}",
        )
        return task.remote(submission.argv, submission.env, os.getcwd(), submission.grace_s, link, self.board)

    def finished(self, handles: list[Any], timeout_s: float) -> list[Any]:
        if not handles:
            time.sleep(timeout_s)
            return []
        done, _ = self.ray.wait(handles, num_returns=len(handles), timeout=timeout_s)
        return list(done)

    def outcome(self, handle: Any) -> tuple[int | None, str | None]:
        """(exit code, None), or (None, why) for a task Ray could not finish (its node died past every retry, or it
        was cancelled before it started)."""
        ray = self.ray
        try:
            return int(ray.get(handle)), None
        except ray.exceptions.TaskCancelledError:
            return None, "cancelled"
        except ray.exceptions.RayError as error:
            return None, " ".join(str(error).split())[:300]

    def cancel(self, handle: Any) -> None:
        self.ray.cancel(handle, force=False)  # KeyboardInterrupt in the task: its tune gets SIGINT (task.py)

    def heard(self) -> dict[str, dict[int, dict[str, Any]]]:
        """What the board heard; what it said last time, should it not answer for a moment."""
        try:
            self._heard = dict(self.ray.get(self.board.snapshot.remote(), timeout=30))
        except self.ray.exceptions.RayError:
            pass
        return self._heard

    def close(self) -> None:
        self.ray.shutdown()
