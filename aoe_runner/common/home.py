"""Where aoe-runner keeps its own files: `AOE_RUNNER_HOME`, else the user's data directory."""

from __future__ import annotations

import os
from pathlib import Path

HOME_VARIABLE = "AOE_RUNNER_HOME"


def runner_home() -> Path:
    configured = os.environ.get(HOME_VARIABLE)
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("aoe-runner", appauthor=False))


def bank_pointer(home: Path, bank: Path) -> Path:
    """The file under the aoe-runner home that names a bank's newest inventory (one per resolved bank path)."""
    import hashlib  # here, not at the top: every command imports this module, few need a hash

    return home / "banks" / hashlib.sha256(os.fsencode(os.path.realpath(bank))).hexdigest()
