"""Where published versions are kept: this home's `releases/<name>/<N>.json`, and the shared store when one is chosen.

Numbers are given per name under a lock: the home's `releases/<name>/.lock` (flock), or, with a shared store, the
database's (two hosts never get the same number). A record is written whole and renamed into place.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from aoe_runner.common.files import atomic_write_text
from aoe_runner.common.jsontext import dump_json, load_json
from aoe_runner.common.quantities import ascii_digits
from aoe_runner.common.regular_files import read_with_status
from aoe_runner.errors import InputError
from aoe_runner.releases.version import BankVersion, check_name

if TYPE_CHECKING:
    from aoe_runner.store.pg_index import PgIndex

MAX_RECORD_BYTES = 64 << 20


class Catalog:
    def __init__(self, home: Path, shared: PgIndex | None = None, warn: Callable[[str], None] = lambda message: None) -> None:
        self.root = home / "releases"
        self.shared = shared
        self.warn = warn

    def publish(self, version: BankVersion) -> BankVersion:
        """Record `version` under the next number of its name; returns it numbered."""
        numbered: list[BankVersion] = []

        def text(number: int) -> str:
            numbered.append(replace(version, number=number))
            return dump_json(numbered[-1])

        try:
            with self._name_lock(version.name):
                if self.shared is not None:
                    from aoe_runner.store.pg_versions import publish_version

                    publish_version(self.shared, version.name, version.host, version.published_at.isoformat(), text)
                else:
                    text(max(self._local_numbers(version.name), default=0) + 1)
                self._write_local(numbered[-1])
        except OSError as error:  # a full disk, a read-only home
            said = f"{numbered[-1].label} is in the shared store, but " if numbered and self.shared is not None else ""
            why = f"{said}the version cannot be recorded here: {error.strerror or error}"
            raise InputError(str(self.root / version.name), why) from None
        return numbered[-1]

    def versions(self, name: str | None = None) -> list[BankVersion]:
        """Every version (of one name), by name then number: the shared store's, and this home's own."""
        found: dict[tuple[str, int], BankVersion] = {}
        for directory in [self.root / name] if name else self._name_directories():
            for number in sorted(self._local_numbers(directory.name)):
                try:
                    found[(directory.name, number)] = self._load_local(directory.name, number)
                except InputError as error:  # one damaged record: said, and the others still listed
                    self.warn(f"{error.message}; skipped")
        for text in self._shared_records(name):
            try:
                version = load_json(BankVersion, text)
            except ValueError as error:
                self.warn(f"a bank version in the shared store cannot be read ({str(error).splitlines()[0]}); skipped")
                continue
            found[(version.name, version.number)] = version
        return [found[key] for key in sorted(found)]

    def get(self, name: str, number: int | None) -> BankVersion:
        """NAME@N, or the latest version of NAME."""
        versions = self.versions(check_name(name))
        if not versions:
            raise InputError(name, "no version of this bank is published (aoe-runner bank versions lists them)")
        if number is None:
            return versions[-1]
        for version in versions:
            if version.number == number:
                return version
        raise InputError(f"{name}@{number}", f"no such version; the latest is {versions[-1].label}")

    # -- this home --------------------------------------------------------------------------------

    def _write_local(self, version: BankVersion) -> None:
        atomic_write_text(self.root / version.name / f"{version.number}.json", dump_json(version))

    def _load_local(self, name: str, number: int) -> BankVersion:
        path = self.root / name / f"{number}.json"
        data, _ = read_with_status(str(path), MAX_RECORD_BYTES)
        try:
            version = load_json(BankVersion, data)
        except ValueError as error:
            raise InputError(str(path), f"not a bank version record: {str(error).splitlines()[0]}") from None
        if (version.name, version.number) != (name, number):
            raise InputError(str(path), f"names {version.label}, not the version its place says ({name}@{number})")
        return version

    def _local_numbers(self, name: str) -> list[int]:
        if (self.root / name).is_symlink():  # not a name directory of ours (and runs prune would not see it)
            return []
        try:
            names = os.listdir(self.root / name)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as error:
            raise InputError(str(self.root / name), f"cannot read directory: {error.strerror}") from None
        return [int(entry[:-5]) for entry in names if entry.endswith(".json") and ascii_digits(entry[:-5])]

    def _name_directories(self) -> list[Path]:
        try:
            entries = sorted(os.scandir(self.root), key=lambda entry: entry.name)
        except FileNotFoundError:
            return []
        return [Path(entry.path) for entry in entries if entry.is_dir(follow_symlinks=False) and not entry.name.startswith(".")]

    def _shared_records(self, name: str | None) -> list[str]:
        if self.shared is None:
            return []
        from aoe_runner.store.pg_versions import version_records

        try:
            return version_records(self.shared, name)
        except InputError as error:  # the store cannot be reached: this home's versions, said once
            self.warn(f"the shared store's bank versions are not listed: {error.message}")
            self.shared = None
            return []

    @contextmanager
    def _name_lock(self, name: str) -> Iterator[None]:
        directory = self.root / check_name(name)
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def catalog(home: Path, warn: Callable[[str], None]) -> Catalog:
    """This home's versions, with the shared store's when the home uses one."""
    from aoe_runner.store.config import current_choice

    choice = current_choice(home)
    if choice.url is None:
        return Catalog(home, None, warn)
    from aoe_runner.store.pg_index import PgIndex

    return Catalog(home, PgIndex(choice.url, choice.shown, warn), warn)
