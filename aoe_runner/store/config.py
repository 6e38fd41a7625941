"""Which run store a command uses: `--store URL`, else AOE_RUNNER_STORE, else `store.conf` in the home, else local.

`store.conf` holds `url = postgresql://user@host/db` and is written by `aoe-runner store init` without the password:
credentials come from the URL given on the command line or in the environment, from PGPASSWORD, or from ~/.pgpass.
Artifacts (logs, result files, bank contents) go under AOE_RUNNER_ARTIFACTS (or `artifacts = DIR` in store.conf)
when set, a directory every host mounts (NFSv4); otherwise they stay in this host's home and the index names the host.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from aoe_runner.errors import UsageError
from aoe_runner.home import runner_home
from aoe_runner.store import secrets

if TYPE_CHECKING:
    from aoe_runner.runs.store import RunStore

STORE_VARIABLE = "AOE_RUNNER_STORE"
ARTIFACTS_VARIABLE = "AOE_RUNNER_ARTIFACTS"
CONFIG_NAME = "store.conf"
LOCAL = "local"
_SCHEMES = ("postgresql", "postgres")
_chosen: list[str] = []  # --store, when given: kept here, not in the environment the training script inherits


@dataclass(frozen=True)
class StoreChoice:
    url: str | None  # None: the local store
    artifacts: Path | None
    source: str  # where the choice came from, for messages

    @property
    def shown(self) -> str:
        return redact(self.url) if self.url else LOCAL


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


def open_store(warn: Callable[[str], None] | None = None, home: Path | None = None, local_only: str | None = None) -> RunStore:
    """The run store this command reads and writes; psycopg is imported only for a PostgreSQL store.

    local_only names a command that acts on this host's local history only (removing runs): with a shared store
    chosen it is refused, before anything is touched, unless --store local says which history is meant.
    """
    home = home or runner_home()
    choice = current_choice(home)
    if choice.url is not None and local_only:
        raise UsageError(f"{local_only} removes runs from this host's local history only: run it with --store local")
    if choice.url is None:
        from aoe_runner.runs.store import RunStore

        return RunStore(home, warn=warn)
    from aoe_runner.store.shared import SharedRunStore

    return SharedRunStore(home, choice, warn=warn)


def check_url(url: str, source: str) -> str:
    url = url.strip()
    if url == LOCAL:
        return url
    if "#" in url:  # read as the start of a fragment, it would cut a password in two and show its second half
        raise UsageError(f"{source}: write '#' in the store URL as %23 (or keep the password in ~/.pgpass or PGPASSWORD)")
    try:
        url.encode("utf-8")
        parts = urlsplit(url)
        _remember_passwords(parts.password, parts.query)
    except (ValueError, UnicodeError) as error:  # an unclosed [ of an IPv6 host; bytes that are not UTF-8
        why = "it is not UTF-8 text" if isinstance(error, UnicodeError) else str(error)
        raise UsageError(f"{source}: not a store URL aoe-runner can read: {why}") from None
    if parts.scheme not in _SCHEMES:
        raise UsageError(f"{source}: {redact(url)!r} is not a postgresql:// URL (or 'local')")
    return url


def _remember_passwords(in_user_part: str | None, query: str) -> None:
    """Every password of the URL, as written and decoded: libpq's messages quote a value it cannot decode (a `%`
    that starts no escape) as it is written."""
    from urllib.parse import unquote

    written = [in_user_part or ""]
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if unquote(key) in _SECRET_PARAMETERS:
            written.append(value)
    for password in written:
        secrets.remember(password)
        secrets.remember(unquote(password))


def redact(url: str) -> str:
    """The URL as it may be shown: without its password."""
    return secrets.scrub(without_password(url))


_SECRET_PARAMETERS = ("password", "sslpassword")  # the server's password, and the passphrase of the client's key


def without_password(url: str) -> str:
    """The URL less the password, whether in its user part or as a `password=` parameter."""
    from urllib.parse import parse_qsl, urlencode

    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        host = netloc.rsplit("@", 1)[1]
        netloc = f"{parts.username}@{host}" if parts.username else host
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = (
        parts.query
        if all(key not in _SECRET_PARAMETERS for key, _ in pairs)
        else urlencode([p for p in pairs if p[0] not in _SECRET_PARAMETERS], safe="/")
    )
    return f"{parts.scheme}://{netloc}{parts.path}{'?' + query if query else ''}"  # urlunsplit would drop an empty host


def read_config(home: Path) -> dict[str, str]:
    try:
        text = (home / CONFIG_NAME).read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError as error:
        raise UsageError(f"{home / CONFIG_NAME}: cannot read the store configuration: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{home / CONFIG_NAME}: cannot read the store configuration: it is not UTF-8 text") from None
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line and not line.lstrip().startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def write_config(home: Path, url: str, artifacts: Path | None) -> Path:
    """store.conf with the URL less its password (mode 0600 all the same: it names a server)."""
    from aoe_runner.fsutil import atomic_write_text

    lines = ["# written by 'aoe-runner store init'; passwords come from PGPASSWORD or ~/.pgpass, never from here"]
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
