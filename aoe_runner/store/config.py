"""Which run store a command uses: `--store URL`, else AOE_RUNNER_STORE, else `store.conf` in the home, else local.

`store.conf` holds `url = postgresql://user@host/db` and is written by `aoe-runner store init` without the password:
credentials come from the URL given on the command line or in the environment, from PGPASSWORD, or from ~/.pgpass.
Artifacts (logs, result files, bank contents) go under AOE_RUNNER_ARTIFACTS (or `artifacts = DIR` in store.conf)
when set, a directory every host mounts (NFSv4); otherwise they stay in this host's home and the index names the host.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from aoe_runner.common.home import runner_home
from aoe_runner.errors import UsageError
from aoe_runner.store.choice import LOCAL, StoreChoice, check_url, redact, without_password

if TYPE_CHECKING:
    from aoe_runner.runs.history import RunStore

STORE_VARIABLE = "AOE_RUNNER_STORE"
ARTIFACTS_VARIABLE = "AOE_RUNNER_ARTIFACTS"
CONFIG_NAME = "store.conf"
_chosen: list[str] = []  # --store, when given: kept here, not in the environment the training script inherits


def choose_store(url: str | None) -> None:
    """--store URL: this command's store, ahead of the environment and the config file."""
    _chosen[:] = [check_url(url, "--store")] if url is not None else []


def current_choice(home: Path | None = None) -> StoreChoice:
    home = home or runner_home()
    config = read_config(home)
    artifacts = os.environ.get(ARTIFACTS_VARIABLE) or config.get("artifacts")
    artifacts_dir = Path(artifacts).expanduser() if artifacts else None
    for url, source in ((_chosen[0] if _chosen else None, "--store"), (os.environ.get(STORE_VARIABLE), STORE_VARIABLE)):
        if url:
            return _choice(check_url(url, source), artifacts_dir, source)
    if config.get("url"):
        where = str(home / CONFIG_NAME)
        url = check_url(config["url"], where)
        if without_password(url) != url:
            raise UsageError(f"{where}: holds a password; keep it in ~/.pgpass or PGPASSWORD, never in this file")
        return _choice(url, artifacts_dir, where)
    return StoreChoice(None, None, "default")


def open_store(
    warn: Callable[[str], None] | None = None,
    home: Path | None = None,
    local_only: str | None = None,
    reading: bool = False,
) -> RunStore:
    """The run store this command reads and writes; psycopg is imported only for a PostgreSQL store.

    local_only names a command that acts on this host's local history only (removing runs): with a shared store
    chosen it is refused, before anything is touched, unless --store local says which history is meant.
    `reading`: a command that only reads the history gets this home's local history, and one warning, when the
    shared store that AOE_RUNNER_STORE or store.conf chose cannot be reached (a store named with --store is not
    replaced: its error stands).
    """
    from aoe_runner.runs.history import RunStore

    home = home or runner_home()
    choice = current_choice(home)
    if choice.url is not None and local_only:
        raise UsageError(f"{local_only} removes runs from this host's local history only: run it with --store local")
    if choice.url is None:
        return RunStore(home, warn=warn)
    from aoe_runner.store.shared import SharedRunStore

    store = SharedRunStore(home, choice, warn=warn)
    problem = store.unreachable() if reading and choice.source != "--store" else None
    if problem is None:
        return store
    if warn is not None:
        warn(f"{problem.message}; reading this host's history instead ({home}), without other hosts' runs")
    return RunStore(home, warn=warn)


def read_config(home: Path) -> dict[str, str]:
    try:
        text = (home / CONFIG_NAME).read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError as error:
        raise UsageError(f"{home / CONFIG_NAME}: cannot read the store configuration: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{home / CONFIG_NAME}: cannot read the store configuration: it is not UTF-8 text") from None
    return _settings(text, home / CONFIG_NAME)


CONFIG_KEYS = ("url", "artifacts")


def _settings(text: str, path: Path) -> dict[str, str]:
    """`key = value` lines (blank lines and `#` comments aside); UsageError naming the line for any other line or key:
    a misspelt `ulr = ...` was dropped, and runs meant for the shared store went to this host's history unsaid."""
    settings: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, equals, value = line.partition("=")
        if not equals or key.strip() not in CONFIG_KEYS:
            named = key.strip()  # only a key that is a plain word is shown: the line may hold a password
            what = f"{named[:40]!r} is not a setting" if equals and named.isidentifier() else "not a setting"
            raise UsageError(f"{path}, line {number}: {what} (a line is 'url = ...' or 'artifacts = ...')")
        settings[key.strip()] = value.strip()
    return settings


def write_config(home: Path, url: str, artifacts: Path | None) -> Path:
    """store.conf with the URL less its password, or `local` (mode 0600 all the same: it names a server)."""
    from aoe_runner.common.files import atomic_write_text

    lines = ["# written by 'aoe-runner store init' or 'store use'; passwords come from PGPASSWORD or ~/.pgpass, never here"]
    lines.append(f"url = {without_password(url)}")
    if artifacts is not None:
        lines.append(f"artifacts = {artifacts}")
    home.mkdir(parents=True, exist_ok=True)
    path = home / CONFIG_NAME
    atomic_write_text(path, "\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    return path


def _choice(url: str, artifacts: Path | None, source: str) -> StoreChoice:
    return StoreChoice(None if url == LOCAL else url, None if url == LOCAL else artifacts, source)


def init_store(url: str, artifacts: Path | None, home: Path | None = None) -> tuple[Path, int]:
    """Create or migrate the schema of the store at `url` and make it the home's store: the config file written
    (without the password) and the schema version the store now has."""
    from aoe_runner.store.pg_index import PgIndex
    from aoe_runner.store.pg_schema import LATEST

    index = PgIndex(url, redact(url))
    index.check_writable()  # connects, then creates or migrates the schema
    index.close()
    return write_config(home or runner_home(), url, artifacts), LATEST


def use_store(url: str, home: Path | None = None) -> Path:
    """Make `url` (a checked store URL, or `local`) the home's store: a shared one is reached first (its schema
    brought up to date, as any command would), and keeps the artifacts directory store.conf named."""
    home = home or runner_home()
    if url == LOCAL:
        return write_config(home, LOCAL, None)
    artifacts = read_config(home).get("artifacts")
    return init_store(url, Path(artifacts) if artifacts else None, home)[0]
