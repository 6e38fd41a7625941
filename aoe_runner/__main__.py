"""Entry point for `python -m aoe_runner` and the `aoe-runner` command.

main() first makes SIGTERM and SIGHUP act as Ctrl-C does, then imports the CLI inside a KeyboardInterrupt guard:
any of the three while the modules load, before the crash boundary (aoe_runner.cli.crashlog) is in place, is exit
130 with one line, never a traceback. Only a signal that comes before main() runs (the interpreter starting, about
10 ms) ends the process as the signal's default does.

At exit, the interpreter's last garbage collections would walk every object the loaded modules made only to free
memory that exiting returns anyway. main() has the
collector freeze those objects when the process exits, after every other exit handler has run; objects freed by
reference counting are still freed, and files and databases are closed by the code that opened them, never by
a collection. `report` goes further once its result is out (aoe_runner/common/exiting.py): it leaves without freeing its
summary, after the exit handlers have run.
"""

from __future__ import annotations

import atexit
import gc
import signal
import sys
from types import FrameType

INTERRUPTED = 130  # aoe_runner.errors.ExitCode.INTERRUPTED, not imported so that nothing loads before the guard


def main() -> int:
    atexit.register(gc.freeze)  # handlers run last-registered first: this one after those registered later
    sys.unraisablehook = _interrupt_again
    stop = CtrlC()
    started = False
    try:  # from before the first handler is in place: a signal while the others are installed is caught too
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where the parent ignores it (nohup)
            signal.signal(signal.SIGINT, stop)
        for number in (signal.SIGTERM, signal.SIGHUP):  # they act as Ctrl-C does from here on, unless ignored
            if signal.getsignal(number) is signal.SIG_DFL:
                signal.signal(number, stop)
        from aoe_runner.cli.main import main as cli_main
        from aoe_runner.common import exiting

        exiting.run_as_program()
        started = True
        code = cli_main()  # its crash boundary says "interrupted" for a signal while the command runs
    except KeyboardInterrupt:  # while the modules load, or raised again (_interrupt_again) as the command returns
        if not started:
            sys.stderr.write("error: interrupted\n")
        code = INTERRUPTED
    finally:
        sys.setprofile(None)  # a re-raise still pending is spent: the exit code already says interrupted
    if stop.received:
        _end(code)
    return code


def _end(code: int) -> None:
    """Exit now with `code`. CPython 3.11 marks a KeyboardInterrupt raised in code that exec() ran from a string (a
    dataclass being defined while a module loads) as unhandled even once it is caught, and would end the process by
    SIGINT after the exit code was decided: 130 must stay 130."""
    from aoe_runner.common.exiting import end_now

    end_now(code)


class CtrlC:
    """SIGINT, SIGTERM or SIGHUP raised as Python's own handler raises SIGINT (KeyboardInterrupt, with the signal's
    name), remembering that it came: an exception
    that a Ctrl-C turned into another (pydantic-core reports one while it builds a validator as a SchemaError) is
    then known, at the crash boundary (aoe_runner/cli/crashlog.py), as the interruption it is."""

    received = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        raise KeyboardInterrupt(signal.Signals(signum).name)  # which signal: a campaign records what stopped it


def _interrupt_again(unraisable: sys.UnraisableHookArgs) -> None:
    """A Ctrl-C that lands in code Python runs on its own behalf (the weakref callback that drops an import's module
    lock, a __del__) is printed as "Exception ignored ... Traceback" and lost: the command would go on as if never
    interrupted. It is raised again instead, where the command can stop (one line, exit 130): as the first function
    of ours returns after this hook (a signal raised here would be raised, and lost, in the hook itself)."""
    if unraisable.exc_type is None or not issubclass(unraisable.exc_type, KeyboardInterrupt):
        sys.__unraisablehook__(unraisable)
        return
    hook = sys._getframe()

    def on_return(frame: FrameType, event: str, arg: object) -> None:
        if event == "return" and frame is not hook and not frame.f_code.co_filename.startswith("<frozen "):
            sys.setprofile(None)
            raise KeyboardInterrupt

    sys.setprofile(on_return)


if __name__ == "__main__":
    raise SystemExit(main())
