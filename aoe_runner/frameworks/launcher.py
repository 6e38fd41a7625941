"""Throw a framework's AOE switch in this process, then run the training script as `__main__`.

aoe-runner runs this file by path with the script's own interpreter, which need not be able to import aoe_runner:
it uses the standard library only and the syntax of Python 3.7 (MindSpore and torch_npu environments run old
interpreters). Never imported by aoe-runner itself.

    python launcher.py --report FILE SWITCH -- SCRIPT [ARGUMENTS...]

SWITCH is one of
    --mindspore-job-type 1|2   MindSpore online tuning: op_tuning.aoe_tune_mode/aoe_job_type from 2.5, else
                               set_context(aoe_tune_mode="online", aoe_config={"job_type": ...})
    --torch-dump DIR           torch_npu.npu.set_aoe(DIR): the graphs are dumped as the model runs
    --torch-jit-compile        torch_npu.npu.set_compile_mode(jit_compile=True): a tuned bank is only used so

Before the script starts, FILE receives (written whole, then renamed into place) a JSON object: the framework, its
version, the calls made, and `error` when the switch could not be thrown; the launcher then exits 4 without running
the script. The script runs with its own `sys.argv`, `sys.path[0]` and `__file__`; its exit code is the process's,
and a traceback shows the script's frames only.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import signal
import sys
import traceback
from typing import Any

SWITCH_FAILED = 4  # aoe-runner's exit code for an environment that cannot do what was asked


def main(argv: list[str]) -> int:
    report_path, switch, value, script, arguments = _parse(argv)
    try:
        report = _throw(switch, value)
    except Exception as error:  # noqa: BLE001 (any failure of the framework's own code is reported, not raised)
        report = {"framework": _FRAMEWORKS[switch], "error": _one_line(error)}
    report["python"] = sys.executable
    _write(report_path, report)
    if "error" in report:
        sys.stderr.write(f"aoe-runner launcher: cannot switch AOE on: {report['error']}\n")
        return SWITCH_FAILED
    return _run_script(script, arguments)


_FRAMEWORKS = {"--mindspore-job-type": "mindspore", "--torch-dump": "pytorch", "--torch-jit-compile": "pytorch"}


def _parse(argv: list[str]) -> tuple[str, str, str | None, str, list[str]]:
    """(report file, switch, its value, script, its arguments); exits 2 on anything else."""
    try:
        split = argv.index("--")
        options, rest = argv[:split], argv[split + 1 :]
        if options[0] != "--report" or not rest:
            raise ValueError
        report_path, switch = options[1], options[2]
        value = options[3] if switch in ("--mindspore-job-type", "--torch-dump") else None
        if switch not in _FRAMEWORKS or len(options) != (4 if value is not None else 3):
            raise ValueError
        if switch == "--mindspore-job-type" and value not in ("1", "2"):
            raise ValueError
    except (ValueError, IndexError):
        sys.stderr.write("usage: launcher.py --report FILE SWITCH -- SCRIPT [ARGUMENTS...] (see its docstring)\n")
        raise SystemExit(2) from None
    return report_path, switch, value, rest[0], rest[1:]


def _throw(switch: str, value: str | None) -> dict[str, Any]:
    if switch == "--mindspore-job-type":
        return _mindspore(value)
    torch_npu = _import("torch_npu")
    version = str(getattr(torch_npu, "__version__", "unknown"))
    if switch == "--torch-dump":
        torch_npu.npu.set_aoe(value)
        call = f"torch_npu.npu.set_aoe({value!r})"
    else:
        torch_npu.npu.set_compile_mode(jit_compile=True)
        call = "torch_npu.npu.set_compile_mode(jit_compile=True)"
    return {"framework": "pytorch", "version": version, "calls": [call]}


def _mindspore(job_type: str | None) -> dict[str, Any]:
    """The switch MindSpore documents for its version: op_tuning from 2.5 (set_context's parameters are deprecated
    there), set_context before; a version that cannot be read takes op_tuning when MindSpore has it."""
    mindspore = _import("mindspore")
    version = str(getattr(mindspore, "__version__", "unknown"))
    numbers = _version_numbers(version)
    op_tuning = None
    if numbers is None or numbers >= (2, 5):
        try:
            op_tuning = importlib.import_module("mindspore.device_context.ascend.op_tuning")
        except ImportError:
            op_tuning = None
    if op_tuning is not None:
        op_tuning.aoe_tune_mode("online")
        op_tuning.aoe_job_type(job_type)
        calls = [
            "mindspore.device_context.ascend.op_tuning.aoe_tune_mode('online')",
            f"mindspore.device_context.ascend.op_tuning.aoe_job_type({job_type!r})",
        ]
    else:
        mindspore.set_context(aoe_tune_mode="online", aoe_config={"job_type": job_type})
        calls = [f"mindspore.set_context(aoe_tune_mode='online', aoe_config={{'job_type': {job_type!r}}})"]
    return {"framework": "mindspore", "version": version, "calls": calls}


def _version_numbers(version: str) -> tuple[int, int] | None:
    """(major, minor) of a version such as 2.5.0 or 2.4.10rc1; None when it does not start so."""
    parts = version.split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or "x")
    except (ValueError, IndexError):
        return None


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise RuntimeError(f"{name} is not importable by {sys.executable}: {_one_line(error)}") from None


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if isinstance(error, RuntimeError) else f"{type(error).__name__}: {text}"


def _write(path: str, report: dict[str, Any]) -> None:
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    os.replace(partial, path)


def _run_script(script: str, arguments: list[str]) -> int:
    """The script as `python SCRIPT ARGUMENTS` would run it, from this process."""
    path = os.path.abspath(script)
    sys.argv = [script] + list(arguments)
    sys.path[0] = os.path.dirname(path)
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit:
        raise
    except BaseException as error:  # noqa: BLE001 (reported as Python reports an uncaught exception)
        _report_uncaught(error, path)
        if isinstance(error, KeyboardInterrupt):  # Python ends by SIGINT then, so the parent sees a Ctrl-C
            atexit._run_exitfuncs()
            sys.stdout.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        return 1
    return 0


def _report_uncaught(error: BaseException, path: str) -> None:
    """The exception through sys.excepthook (the script may have set its own), from the script's first frame on."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    if tb is not None:
        error.with_traceback(tb)  # Python's own hook prints the exception's traceback, whatever it is given
    try:
        sys.excepthook(type(error), error, error.__traceback__)
    except Exception:  # noqa: BLE001 (a broken hook: Python's own printing)
        traceback.print_exception(type(error), error, tb)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
