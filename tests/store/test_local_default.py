"""Without a shared store nothing changes: the local history answers --host and --soc, and psycopg is never loaded."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.cli.test_import_sets import _loaded
from tests.tune.runner import Home, aoe_runner, tune


def test_the_local_history_filters_by_host_and_soc(tmp_path: Path) -> None:
    home = Home(tmp_path)
    code, _, err = tune(home, "exit", "0")
    assert code == 0, err

    def ids(*options: str) -> list[str]:
        return [json.loads(line)["id"] for line in aoe_runner(home, "runs", "list", "--json", *options).stdout.splitlines()]

    (run_id,) = ids()
    assert ids("--host", socket.gethostname()) == [run_id]
    assert ids("--host", "elsewhere") == []
    assert ids("--soc", "Ascend910B3") == []  # no NPU here: the SoC is unknown


def test_commands_on_the_local_history_never_import_psycopg(tmp_path: Path) -> None:
    for command in (("runs", "list"), ("--help",), ("report", "sample_results/", "--format", "json")):
        assert not [name for name in _loaded(tmp_path, *command) if name.startswith("psycopg")], command
