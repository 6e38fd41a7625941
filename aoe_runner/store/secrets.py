"""Keep database passwords out of everything aoe-runner prints or writes: output, errors, manifests, crash logs.

A password can only come from the store URL, the environment (PGPASSWORD) or ~/.pgpass. Every password seen in a
URL is remembered for this process, and scrub() removes it, and any `password=` or `user:password@` shape, from a
text; psycopg's messages can quote the connection string, so each of its errors passes through here.
"""

from __future__ import annotations

import os
import re

_SEEN: set[str] = set()
# a password may hold / or # (libpq takes them): everything up to the @ is hidden
_IN_URL = re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^/:@\s]*:)(?P<secret>[^@\s]*)@", re.IGNORECASE)
_IN_CONNINFO = re.compile(
    r"(?P<head>\b(?:ssl)?password\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'|[^\s&]+)", re.IGNORECASE
)  # also a URL's ?password=...&... and the client key's passphrase
HIDDEN = "***"


def remember(password: str | None) -> None:
    if password:
        _SEEN.add(password)


def scrub(text: str) -> str:
    text = _IN_URL.sub(lambda found: found["head"] + HIDDEN + "@", text)
    text = _IN_CONNINFO.sub(lambda found: found["head"] + HIDDEN, text)
    for secret in sorted(_SEEN | _environment_passwords(), key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return text


def _environment_passwords() -> set[str]:
    password = os.environ.get("PGPASSWORD")
    return {password} if password else set()
