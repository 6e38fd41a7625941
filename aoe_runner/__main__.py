"""Entry point for `python -m aoe_runner`."""

from aoe_runner.cli import main

raise SystemExit(main())
