"""Start `aoe-runner tune` on the simulator as a real process, wait for what it prints, inspect what it leaves."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.conftest import ROOT

SIMULATOR = ROOT / "tests" / "simulator" / "train.py"


@dataclass
class Home:
    """aoe-runner's home and lock directory for one test, and the environment that points at them."""

    root: Path

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "AOE_RUNNER_HOME": str(self.root / "home"),
            "AOE_RUNNER_LOCK_DIR": str(self.root / "locks"),
            "PYTHONPATH": str(ROOT),
        }

    def manifests(self) -> list[dict]:
        """Every run's manifest, oldest first (run ids of one second sort by their random part, so by start time)."""
        found = [json.loads(path.read_text()) for path in (self.root / "home" / "runs").glob("*/manifest.json")]
        return sorted(found, key=lambda manifest: manifest["started_at"])

    def only_manifest(self) -> dict:
        (manifest,) = self.manifests()
        return manifest


def aoe_runner(home: Home, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`aoe-runner ARGV` in the home, with `env` added to its environment."""
    return subprocess.run(
        [sys.executable, "-m", "aoe_runner", *argv],
        env={**home.env, **(env or {})},
        cwd=home.root,
        capture_output=True,
        text=True,
        timeout=120,
    )


def tune_command(*script_args: str, options: tuple[str, ...] = ()) -> list[str]:
    """`aoe-runner tune SIMULATOR --mode op --force --grace 0.5s OPTIONS -- SCRIPT_ARGS`."""
    command = [sys.executable, "-m", "aoe_runner", "tune", str(SIMULATOR), "--mode", "op", "--force", "--grace", "0.5s"]
    return [*command, *options, "--", *script_args]


def start_tune(home: Home, *script_args: str, options: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    return subprocess.Popen(
        tune_command(*script_args, options=options),
        env=home.env,
        cwd=home.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def tune(home: Home, *script_args: str, options: tuple[str, ...] = ()) -> tuple[int, str, str]:
    process = start_tune(home, *script_args, options=options)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def wait_for_output(process: subprocess.Popen[str], text: str, timeout_s: float = 30.0, stream: str = "stdout") -> str:
    """Read the process's stdout (or stderr) until it contains text; fail after timeout_s.

    What is read here is gone for a later communicate(): the caller gets it as the result.
    """
    pipe = getattr(process, stream)
    assert pipe is not None
    seen = ""
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(pipe, selectors.EVENT_READ)
        while text not in seen:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                raise AssertionError(f"no {text!r} within {timeout_s} s; {stream} so far: {seen!r}")
            chunk = os.read(pipe.fileno(), 65536)  # not readline: its buffer would hide data from select
            if not chunk:
                raise AssertionError(f"{stream} closed before {text!r}; exit {process.wait()}; got {seen!r}")
            seen += chunk.decode(errors="replace")
    return seen


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def pids_in(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def pid_when_written(pid_file: Path, timeout_s: float = 10.0) -> int:
    """The first pid in pid_file, once one is there; fail after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while not pids_in(pid_file):
        assert time.monotonic() < deadline, f"no pid in {pid_file}"
        time.sleep(0.01)
    return pids_in(pid_file)[0]


def wait_until_gone(pids: list[int], timeout_s: float = 10.0) -> list[int]:
    """The pids still alive after timeout_s (an orphan is reaped by init a moment after it dies)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        living = [pid for pid in pids if alive(pid)]
        if not living:
            return []
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


def on_a_terminal(command: list[str], env: dict[str, str], cwd: Path) -> tuple[int, bytes]:
    """Run `command` with a pseudo-terminal as stderr (stdout a pipe): its exit code and all it wrote there."""
    import pty

    controller, terminal = pty.openpty()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=terminal)
    os.close(terminal)
    seen = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal side closed: the process is done
            break
        if not chunk:
            break
        seen += chunk
    process.communicate(timeout=60)
    os.close(controller)
    return process.returncode, seen
