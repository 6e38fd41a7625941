"""A record moved to another directory name, or edited to name another run, is left out of the index with one
warning each time the index is rebuilt, and the others are still listed and reached as `latest` (issue 42, second
pass: such a record used to be indexed under its own id, rejected as a row with no manifest, and rebuilt forever)."""

from __future__ import annotations

import json

import pytest

from tests.tune.runner import Home, aoe_runner, tune


@pytest.mark.parametrize("how", ["renamed", "edited"])
def test_a_record_that_does_not_name_its_directory_is_left_out_once(tmp_path, how: str) -> None:  # type: ignore[no-untyped-def]
    home = Home(tmp_path)
    for _ in range(2):
        assert tune(home, "exit", "0")[0] == 0
    runs = tmp_path / "home" / "runs"
    older, newer = sorted(path.name for path in runs.iterdir())
    if how == "renamed":
        (runs / newer).rename(runs / "old-run")
        odd = runs / "old-run"
    else:
        manifest = runs / newer / "manifest.json"
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "id": older}))
        odd = runs / newer
    (tmp_path / "home" / "runs.db").unlink()
    first = aoe_runner(home, "runs", "list")
    assert first.returncode == 0 and f"{odd / 'manifest.json'}: names run" in first.stderr
    second = aoe_runner(home, "runs", "show", "latest")
    assert second.returncode == 0, second.stderr
    assert f"run {older}:" in second.stdout and "rebuilt the index" not in second.stderr
