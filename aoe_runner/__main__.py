"""Entry point for `python -m aoe_runner` and the `aoe-runner` command.

main() imports the CLI inside a KeyboardInterrupt guard: Ctrl-C while the modules load, before the crash boundary
(aoe_runner.cli.crashlog) is in place, is exit 130 with one line, never a traceback.

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
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where the parent ignores Ctrl-C (nohup)
        signal.signal(signal.SIGINT, CtrlC())
    try:
        from aoe_runner.cli.main import main as cli_main
        from aoe_runner.common import exiting
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return INTERRUPTED
    exiting.run_as_program()
    return cli_main()


class CtrlC:
    """SIGINT raised as Python's own handler raises it (KeyboardInterrupt), remembering that it came: an exception
    that a Ctrl-C turned into another (pydantic-core reports one while it builds a validator as a SchemaError) is
    then known, at the crash boundary (aoe_runner/cli/crashlog.py), as the interruption it is."""

    received = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        raise KeyboardInterrupt


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
