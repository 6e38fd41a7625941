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

The script must see what `python SCRIPT` shows it, so this file imports nothing beyond `os` and `sys` (which every
interpreter has loaded before any script) until the script has run: `sys.path[0]` is the script's directory before
the framework is imported (a framework vendored beside the script is the one switched on, as the script's own
import would find it), and a module of the script's directory named like a standard one (`json.py`) is the one
the script imports. Before the script starts, FILE receives (written whole, then renamed into place) a JSON object:
the framework, its version, the calls made, and `error` when the switch could not be thrown; the launcher then exits
4 without running the script. The script runs with its own `sys.argv` and `__file__`; its exit code is the
process's, and a traceback shows the script's frames only.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported at run time (see above); the type checker reads this as True
if TYPE_CHECKING:
    from typing import Any

SWITCH_FAILED = 4  # aoe-runner's exit code for an environment that cannot do what was asked
_FRAMEWORKS = {"--mindspore-job-type": "mindspore", "--torch-dump": "pytorch", "--torch-jit-compile": "pytorch"}


def main(argv: list[str]) -> int:
    report_path, switch, value, script, arguments = _parse(argv)
    path = os.path.abspath(script)
    sys.path[0] = os.path.dirname(path)  # as `python SCRIPT` sets it, before anything is imported from it
    try:
        report = _throw(switch, value)
    except Exception as error:  # noqa: BLE001 (any failure of the framework's own code is reported, not raised)
        report = {"framework": _FRAMEWORKS[switch], "error": _one_line(error)}
    report["python"] = sys.executable
    _write(report_path, report)
    if "error" in report:
        sys.stderr.write(f"aoe-runner launcher: cannot switch AOE on: {report['error']}\n")
        return SWITCH_FAILED
    sys.argv = [script, *arguments]
    return _run_script(path)


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


def _throw(switch: str, value: str | None) -> dict[str, object]:
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


def _mindspore(job_type: str | None) -> dict[str, object]:
    """The switch MindSpore documents for its version: op_tuning from 2.5 (set_context's parameters are deprecated
    there), set_context before; a version that cannot be read takes op_tuning when MindSpore has it."""
    mindspore = _import("mindspore")
    version = str(getattr(mindspore, "__version__", "unknown"))
    numbers = _version_numbers(version)
    op_tuning = None
    if numbers is None or numbers >= (2, 5):
        try:
            op_tuning = _import("mindspore.device_context.ascend.op_tuning", quiet=True)
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


def _import(name: str, quiet: bool = False) -> Any:
    """The module `name` (dotted), imported as the script's `import name` would; RuntimeError saying why not."""
    try:
        __import__(name)
        return sys.modules[name]
    except ImportError as error:
        if quiet:
            raise
        raise RuntimeError(f"{name} is not importable by {sys.executable}: {_one_line(error)}") from None


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if isinstance(error, RuntimeError) else f"{type(error).__name__}: {text}"


def _write(path: str, report: dict[str, object]) -> None:
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(_json(report))
    os.replace(partial, path)


def _json(value: object) -> str:
    """JSON of the report's values (text, lists and objects of text), without the json module (see above)."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_json(str(key))}: {_json(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_json(item) for item in value) + "]"
    text = str(value)
    escaped = []
    for character in text:
        code = ord(character)
        if character in '"\\' or code < 0x20 or code >= 0x7F:
            if code > 0xFFFF:  # a pair of surrogates, as JSON writes a character beyond the BMP
                code -= 0x10000
                escaped.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
            else:
                escaped.append(f"\\u{code:04x}")
        else:
            escaped.append(character)
    return '"' + "".join(escaped) + '"'


def _run_script(path: str) -> int:
    """The script as `python SCRIPT` runs it: compiled from its file, executed as a fresh `__main__` module."""
    main_module = type(sys)("__main__")
    main_module.__file__ = path
    main_module.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main_module
    try:
        with open(path, "rb") as handle:
            code = compile(handle.read(), path, "exec", dont_inherit=True)
        exec(code, main_module.__dict__)
    except SystemExit:
        raise
    except BaseException as error:  # noqa: BLE001 (reported as Python reports an uncaught exception)
        _report_uncaught(error, path)
        if isinstance(error, KeyboardInterrupt):  # Python ends by SIGINT then, so the parent sees a Ctrl-C
            _die_by_sigint()
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
        import traceback

        traceback.print_exception(type(error), error, tb)


def _die_by_sigint() -> None:
    import atexit  # built into the interpreter: no file of the script's directory can stand in for it

    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        import _signal as signals  # type: ignore[import-not-found]  # CPython's, built in likewise
    except ImportError:
        import signal as signals
    signals.signal(signals.SIGINT, signals.SIG_DFL)
    os.kill(os.getpid(), signals.SIGINT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
