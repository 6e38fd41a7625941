"""The outermost error boundary: an unexpected exception becomes exit 3 and a crash log with versions."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from aoe_runner import __version__
from aoe_runner.common.home import runner_home
from aoe_runner.common.terminal import Terminal
from aoe_runner.errors import ExitCode

_REPORTED_PACKAGES = ("pydantic", "pydantic-core", "typer", "msgspec", "jsonschema", "tabulate", "psutil")


def run_guarded(dispatch: Callable[[], int], argv: Sequence[str], terminal: Terminal) -> int:
    try:
        return dispatch()
    except KeyboardInterrupt:
        terminal.error("interrupted")
        return ExitCode.INTERRUPTED
    except Exception as error:  # the boundary: anything that reaches here is a bug in aoe-runner
        if getattr(signal.getsignal(signal.SIGINT), "received", False):  # a Ctrl-C that a library turned into this
            terminal.error("interrupted")
            return ExitCode.INTERRUPTED
        from aoe_runner.store.secrets import scrub  # a store URL's password is never printed or logged

        log = write_crash_log(error, argv)
        where = f"crash log: {log}" if log is not None else "no crash log: neither the home nor a temporary directory takes one"
        terminal.error(scrub(f"internal error: {type(error).__name__}: {error} ({where}; please report it)"))
        return ExitCode.INTERNAL


def write_crash_log(error: BaseException, argv: Sequence[str]) -> Path | None:
    """The log written under the home, else in the temporary directory; None when neither can be written."""
    import tempfile  # only a crash needs it: kept out of every command's start-up

    from aoe_runner.store.secrets import scrub

    text = scrub(_crash_report(error, argv))
    for where in (lambda: runner_home() / "crash-logs", lambda: Path(tempfile.gettempdir())):
        try:  # gettempdir raises when no temporary directory is usable: only asked when the home failed
            directory = where()
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"aoe-runner-crash-{datetime.now():%Y%m%d-%H%M%S-%f}.log"
            path.write_text(text, encoding="utf-8")
            return path
        except OSError:
            continue
    return None


def _crash_report(error: BaseException, argv: Sequence[str]) -> str:
    import platform  # only a crash needs these: kept out of every command's start-up
    import traceback

    from aoe_runner.common.build_variant import variant

    lines = [
        "### aoe-runner crash report",
        f"aoe-runner {__version__} ({variant()})",
        f"python {sys.version.split()[0]} ({sys.executable})",
        f"platform {platform.platform()}",
        *(f"{name} {_version_of(name)}" for name in _REPORTED_PACKAGES),
        f"argv {list(argv)!r}",
        "",
        "".join(traceback.format_exception(type(error), error, error.__traceback__)),
    ]
    return "\n".join(lines)


def _version_of(package: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"
