"""A store URL as aoe-runner reads and shows it (never with its password), and the store a command chose."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from aoe_runner.errors import UsageError
from aoe_runner.store import secrets

LOCAL = "local"


_SCHEMES = ("postgresql", "postgres")


@dataclass(frozen=True)
class StoreChoice:
    url: str | None  # None: the local store
    artifacts: Path | None
    source: str  # where the choice came from, for messages

    @property
    def shown(self) -> str:
        return redact(self.url) if self.url else LOCAL


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
    """The URL less the password, whether in its user part or as a `password=` parameter; anything else as it is."""
    from urllib.parse import parse_qsl, urlencode

    if url == LOCAL or "://" not in url:  # `local`, or not a URL at all: shown as written
        return url
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
