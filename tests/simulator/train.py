"""A stand-in for a training script run under AOE, for tests and benchmarks. It never tunes anything.

    python tests/simulator/train.py BEHAVIOUR [options]

Behaviours: progress (prints AOE's log markers, writes a result file report by report and a bank
file), exit N, segfault, hang, stubborn (ignores SIGTERM/SIGINT and spawns a child that does too),
killed-mid-write (one complete result file, then SIGKILL halfway through a second), flood (a lot of
log lines as fast as it can), sleep, hostile-results DIR (writes each file of DIR as a live result
file, and a FIFO named like one, then goes on), daemon (a setsid double-forked daemon, then exit 0),
grandchild (a child with a child of its own, then hang), fill-disk PATH (write PATH until the disk is
full, then exit 0), leave-stubborn (a child that ignores SIGTERM, then exit 0), brief-child (a child that
ends 50 ms after the script).
`--pid-file F` appends the pid of every process it starts.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

try:  # a TensorFlow script on Ascend imports TFAdapter: this one stands in for such a script (`--framework auto` reads tf)
    import npu_bridge  # type: ignore[import-not-found]  # noqa: F401
except ImportError:
    pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("behaviour")
    parser.add_argument("value", nargs="?", default="0")
    parser.add_argument("--reports", type=int, default=3)
    parser.add_argument("--interval", type=float, default=0.3)
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--pid-file")
    parser.add_argument("--soc", default="Ascend910B3")
    parser.add_argument("--format", default="mindspore-ms", help="steps: how step times are printed")
    parser.add_argument("--step-ms", type=float, default=50.0, help="steps: step time with an empty bank")
    parser.add_argument("--bank-factor", type=float, default=1.0, help="steps: step time x this when the bank has files")
    parser.add_argument("--noise", type=float, default=0.01, help="steps: relative noise of each step")
    parser.add_argument("--slow-run", type=int, default=0, help="steps: the Nth invocation (counted in --counter) is 1.5x slower")
    parser.add_argument("--counter", help="steps: a file counting invocations")
    parser.add_argument("--sleep", action="store_true", help="steps: really take the time of each step")
    parser.add_argument("--bank-tail-factor", type=float, default=1.0, help="steps: with the bank, every 10th step x this")
    parser.add_argument("--quiet-run", type=int, default=0, help="steps: the Nth invocation (--counter) prints no step time")
    parser.add_argument("--print-env", action="store_true", help="steps: first print AOE_MODE and TUNE_BANK_PATH")
    parser.add_argument("--with-results", action="store_true", help="steps: under AOE_MODE, also write a result file")
    parser.add_argument("--seed", help="steps: seed the noise with this and the invocation number (--counter), not the pid")
    options = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfault leaves no core file behind
    _note_pid(options.pid_file)
    behaviour = BEHAVIOURS[options.behaviour]
    return behaviour(options)


def progress(options: argparse.Namespace) -> int:
    print("in tune mode, training graph handled by tools", flush=True)
    print(f"AOE_MODE={os.environ.get('AOE_MODE')} TUNE_BANK_PATH={os.environ.get('TUNE_BANK_PATH')}", flush=True)
    result = _result_path()
    reports: dict[str, list[dict]] = {}
    for index in range(options.reports):
        for line in range(options.lines):
            print(f"step {index}.{line}: loss 0.{line:04d}", flush=False)
        print(f"[Aoe]op_{index} Tuning process finished.", file=sys.stderr, flush=True)
        reports[f"report_20261121120000{index:03d}_{1000 + index}"] = _report(index)
        result.write_text(json.dumps(reports, indent=2), encoding="utf-8")  # rewritten in place, as AOE does
        _write_bank_file(options.soc, index)
        time.sleep(options.interval)
    print("[Aoe]Aoe process finished,cost time 3s.", flush=True)
    return 0


def exit_with(options: argparse.Namespace) -> int:
    print(f"exiting with {options.value}", file=sys.stderr, flush=True)
    return int(options.value)


def segfault(options: argparse.Namespace) -> int:
    print("about to crash", flush=True)
    ctypes.string_at(0)  # a real SIGSEGV
    return 0


def hang(options: argparse.Namespace) -> int:
    print("ready", flush=True)
    while True:
        time.sleep(3600)


def stubborn(options: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    child = [sys.executable, __file__, "stubborn-child"] + (["--pid-file", options.pid_file] if options.pid_file else [])
    subprocess.Popen(child)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


def stubborn_child(options: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        time.sleep(3600)


def killed_mid_write(options: argparse.Namespace) -> int:
    first = _result_path("aoe_result_opat_20261121120000000_1.json")
    first.write_text(json.dumps({"report_20261121120000000_1": _report(0)}), encoding="utf-8")
    second = _result_path("aoe_result_opat_20261121120000001_2.json")
    text = json.dumps({f"report_2026112112000000{i}_2": _report(i) for i in range(1, 4)}, indent=2)
    with open(second, "w", encoding="utf-8") as handle:
        handle.write(text[: len(text) * 2 // 3])  # two complete reports and part of the third
        handle.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    return 0


def flood(options: argparse.Namespace) -> int:
    total = int(float(options.value))
    line = b"step 000001: loss 0.123456, lr 0.000100, throughput 1234.5 samples/s [simulated log line]\n"
    out = sys.stdout.buffer  # a line per write under PYTHONUNBUFFERED=1 (as tune runs it), as print() writes a log
    written = 0
    while written < total:
        out.write(line)
        written += len(line)
    out.flush()
    return 0


def hostile_results(options: argparse.Namespace) -> int:
    os.mkfifo(_result_path("aoe_result_opat_fifo.json"))  # opening it for reading would block forever
    for index, source in enumerate(sorted(Path(options.value).iterdir())):
        _result_path(f"aoe_result_opat_20261121120000{index:03d}_{index}.json").write_bytes(source.read_bytes())
        time.sleep(options.interval)
    time.sleep(2.5)  # the watcher reads every file at least once meanwhile
    print("survived every file", flush=True)
    return 0


def daemon(options: argparse.Namespace) -> int:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            _note_pid(options.pid_file)
            os.closerange(0, 3)  # a daemon lets go of the script's pipes
            while True:
                time.sleep(3600)
        os._exit(0)
    os.wait()
    print("daemon started", flush=True)
    time.sleep(0.5)
    return 0


def grandchild(options: argparse.Namespace) -> int:
    child = [sys.executable, __file__, "sleep", "3600"] + (["--pid-file", options.pid_file] if options.pid_file else [])
    if os.fork() == 0:
        subprocess.Popen(child)
        while True:
            time.sleep(3600)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


def fill_disk(options: argparse.Namespace) -> int:
    block = b"\0" * (64 << 10)
    try:
        with open(options.value, "wb") as filler:
            while True:
                filler.write(block)
                filler.flush()
    except OSError as error:
        print(f"the disk is full: {error.strerror}", flush=True)
    return 0


def leave_stubborn(options: argparse.Namespace) -> int:
    child = [sys.executable, __file__, "stubborn-child"] + (["--pid-file", options.pid_file] if options.pid_file else [])
    subprocess.Popen(child, start_new_session=True)
    print("leaving a child behind", flush=True)
    time.sleep(0.3)
    return 0


def brief_child(options: argparse.Namespace) -> int:
    """A helper that ends a moment after the script: exiting together, not left behind."""
    ready = Path(f"{options.pid_file or os.devnull}.child-ready")
    child = [sys.executable, "-c", f"import pathlib, time; pathlib.Path({str(ready)!r}).touch(); time.sleep(0.05)"]
    subprocess.Popen(child)
    while options.pid_file and not ready.exists():  # exit once it runs, whatever its start-up took
        time.sleep(0.005)
    return 0


def aoe_errors(options: argparse.Namespace) -> int:
    """AOE's own error lines, then its finished marker, and no result file (as when the script sets its own work path)."""
    print("in tune mode, training graph handled by tools", flush=True)
    print("[ERROR] AOE(12345,python):2026-11-21-12:00:01.000.000 [EG0013] Device error: set device 0 failed.", flush=True)
    print("[WARNING] AOE(12345,python): WG0000 memory insufficient, tuning may be slow", file=sys.stderr, flush=True)
    print("EH9999: Inner Error! init runtime platform info failed, SocVersion = Ascend910B3", file=sys.stderr, flush=True)
    print("[ERROR] AOE: [EG0013] Device error again", flush=True)
    print("[Aoe]Aoe process finished,cost time 3s.", flush=True)
    return 0


def sleep(options: argparse.Namespace) -> int:
    time.sleep(float(options.value))
    return 0


STEP_LINES = {
    "mindspore-ms": "epoch: 1 step: {step}, loss is 0.1234\nepoch time: 1000.0 ms, per step time: {ms:.3f} ms",
    "mindspore-s": "epoch: 1 step: {step}, loss is 0.1234, per step time: {s:.5f}s, fps: 8.37",
    "tensorflow": "INFO:tensorflow:global_step/sec: {rate:.4f}",
    "common-ms": "[train] step {step} step time {ms:.3f} ms loss 0.5",
    "custom": "it={step} took {ms:.3f}msec",
}


def steps(options: argparse.Namespace) -> int:
    """Print step times as a training script would; faster (or slower) when TUNE_BANK_PATH holds any file."""
    run_number = _count_invocation(options.counter)
    bank = Path(os.environ.get("TUNE_BANK_PATH") or "/nonexistent")
    tuned = bank.is_dir() and any(path.is_file() for path in bank.rglob("*"))
    step_ms = options.step_ms * (options.bank_factor if tuned else 1.0)
    if options.slow_run and run_number == options.slow_run:
        step_ms *= 1.5
    if options.print_env:
        print(f"AOE_MODE={os.environ.get('AOE_MODE')} TUNE_BANK_PATH={os.environ.get('TUNE_BANK_PATH')}", flush=True)
    if options.with_results and os.environ.get("AOE_MODE"):
        _result_path().write_text(json.dumps({"report_20261121120000000_1000": _report(0)}, indent=2), encoding="utf-8")
    if options.quiet_run and run_number == options.quiet_run:
        return 0
    noise = random.Random(os.getpid() if options.seed is None else f"{options.seed}-{run_number}")
    for step in range(int(options.value)):
        ms = step_ms * (10 if step < 3 else 1) * (1 + noise.gauss(0, options.noise))  # the first steps compile
        if tuned and step % 10 == 9:
            ms *= options.bank_tail_factor  # a slow step now and then: the tail, not the median
        if options.sleep:
            time.sleep(ms / 1000)
        print(STEP_LINES[options.format].format(step=step, ms=ms, s=ms / 1000, rate=1000 / ms), flush=False)
    return 0


def huge_result(options: argparse.Namespace) -> int:
    """A sparse result file of `value` bytes that starts as JSON (its first report), then the zeros of a crashed
    writer's preallocation; and a good result file beside it."""
    _result_path("aoe_result_opat_20261121120000001_2.json").write_text(json.dumps({"report_1": _report(0)}))
    with open(_result_path(), "wb") as handle:
        handle.write(b'{"report_1": [')
        handle.truncate(int(float(options.value)))
    return 0


def odd_results(options: argparse.Namespace) -> int:
    """Result names that are no file: a FIFO, a directory, a symbolic link in a loop, a link to /dev/zero."""
    os.mkfifo(_result_path("aoe_result_opat_fifo.json"))
    _result_path("aoe_result_opat_dir.json").mkdir()
    _result_path("aoe_result_opat_loop.json").symlink_to("aoe_result_opat_loop.json")
    _result_path("aoe_result_opat_zero.json").symlink_to("/dev/zero")
    time.sleep(1.5)  # seen by a poll of the running script, not only by the last one
    return 0


def linked_results(options: argparse.Namespace) -> int:
    """One result file under three names: itself, a symbolic link and a hard link."""
    result = _result_path("aoe_result_opat_20261121120000000_1.json")
    result.write_text(json.dumps({"report_20261121120000000_1": _report(0)}), encoding="utf-8")
    _result_path("aoe_result_opat_20261121120000000_2.json").symlink_to(result.name)
    os.link(result, _result_path("aoe_result_opat_20261121120000000_3.json"))
    time.sleep(1.5)
    return 0


def sparse_result(options: argparse.Namespace) -> int:
    """A result file cut off after its first bytes and truncated to VALUE MiB: a hole, no data, on disk."""
    result = _result_path("aoe_result_opat_20261121120000000_9.json")
    result.write_text('{"report_20261121120000000_9": [', encoding="utf-8")
    os.truncate(result, int(options.value) * 2**20)
    return 0


def hopper(options: argparse.Namespace) -> int:
    """Leave behind a process under setsid that ignores SIGTERM and keeps forking and exiting: a new pid every
    fraction of a millisecond, each holding what the script inherited (the device lock). --pid-file gets its
    process group, which every generation keeps."""
    if os.fork() == 0:
        os.setsid()
        _note_pid(options.pid_file)  # its pid is its group's id
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            try:
                if os.fork() != 0:
                    os._exit(0)
            except OSError:  # EAGAIN: exited generations not reaped yet
                time.sleep(0.001)
    time.sleep(0.3)
    return 0


def _count_invocation(counter: str | None) -> int:
    if not counter:
        return 0
    path = Path(counter)
    number = int(path.read_text() or 0) + 1 if path.exists() else 1
    path.write_text(str(number))
    return number


def _report(index: int) -> list[dict]:
    operators = [
        {
            "op_name": f"layer_{index}/MatMul_{n}",
            "op_type": "MatMulV2",
            "tune_performance": {
                "Schedule": {
                    "performance_after_tune(us)": 10.0 + n,
                    "performance_before_tune(us)": 20.0 + n,
                    "performance_improvement": f"{(20.0 + n) / (10.0 + n) * 100 - 100:.2f}%",
                    "update_mode": "add" if n == 0 else "update",
                }
            },
        }
        for n in range(2)
    ]
    return [
        {"basic": {"tuning_name": f"simulated_graph_{index}", "tuning_time(s)": 1}},
        {"OPAT": {"opat_tuning_result": "tuning successful", "repo_modified_operators": operators}},
    ]


def _result_path(name: str | None = None) -> Path:
    directory = Path(os.environ.get("ASCEND_WORK_PATH") or ".") / "aoe_data"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / (name or f"aoe_result_opat_20261121120000000_{os.getpid()}.json")


def _write_bank_file(soc: str, index: int) -> None:
    bank = os.environ.get("TUNE_BANK_PATH")
    if bank:
        target = Path(bank) / soc / "cube" / f"op_{index}.bin"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(os.urandom(64))


def _note_pid(pid_file: str | None) -> None:
    if pid_file:
        with open(pid_file, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")


BEHAVIOURS = {
    "progress": progress,
    "huge-result": huge_result,
    "odd-results": odd_results,
    "linked-results": linked_results,
    "sparse-result": sparse_result,
    "hopper": hopper,
    "exit": exit_with,
    "segfault": segfault,
    "hang": hang,
    "stubborn": stubborn,
    "stubborn-child": stubborn_child,
    "killed-mid-write": killed_mid_write,
    "flood": flood,
    "sleep": sleep,
    "steps": steps,
    "hostile-results": hostile_results,
    "daemon": daemon,
    "grandchild": grandchild,
    "fill-disk": fill_disk,
    "leave-stubborn": leave_stubborn,
    "brief-child": brief_child,
    "aoe-errors": aoe_errors,
}

if __name__ == "__main__":
    sys.exit(main())
