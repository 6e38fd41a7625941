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
import sys

INTERRUPTED = 130  # aoe_runner.errors.ExitCode.INTERRUPTED, not imported so that nothing loads before the guard


def main() -> int:
    atexit.register(gc.freeze)  # handlers run last-registered first: this one after those registered later
    try:
        from aoe_runner.cli.main import main as cli_main
        from aoe_runner.common import exiting
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return INTERRUPTED
    exiting.run_as_program()
    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
