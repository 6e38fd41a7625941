"""Entry point for `python -m aoe_runner` and the `aoe-runner` command.

main() imports the CLI inside a KeyboardInterrupt guard: Ctrl-C while the modules load, before the crash boundary
(aoe_runner.crashlog) is in place, is exit 130 with one line, never a traceback.
"""

from __future__ import annotations

import sys

INTERRUPTED = 130  # aoe_runner.errors.ExitCode.INTERRUPTED, not imported so that nothing loads before the guard


def main() -> int:
    try:
        from aoe_runner.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return INTERRUPTED
    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
