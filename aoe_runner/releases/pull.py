"""`bank pull` and `bank rollback`: a published version written beside a training host's bank path, then swapped in.

    /data/bank -> .bank.versions/resnet@4.k2x9     PATH: a symbolic link, swapped by renaming a new link over it
    /data/.bank.versions/
        resnet@4.k2x9/        the version in place (each pull writes a directory of its own)
        resnet@3.p0aa/        the one before, for `bank rollback`
        history.json          the directories pulled, oldest first (PATH's link says which is in place)
        pull.lock             one pull or rollback of PATH at a time (flock; the next waits)

A pull writes the whole version into a new directory first, checking every content against its sha256 as it copies:
a missing or damaged blob stops it there (exit 4), with PATH untouched. Only then is PATH swapped, by renaming a new
link over the old one, so a training job that starts at any moment finds the old bank or the new one, never a mix;
a kill at any point leaves PATH as it was or as it will be, and the next pull removes what was left half-written.

The bank lock knows a bank by its resolved path: a tune or verify through PATH locks the version directory PATH
leads to. A swap holds that directory's lock exclusively, so it refuses while a tune or verify uses the bank, as
`bank restore` does; once swapped, a new tune through PATH locks the new directory.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aoe_runner.common.files import atomic_write_text, flock_telling
from aoe_runner.errors import AoeRunnerError, ExitCode, InputError
from aoe_runner.releases.version import BankVersion
from aoe_runner.runs.bank import CREATE_FLAGS, READ_FLAGS, copy_file, open_path, regular_stat
from aoe_runner.runs.blobs import SHA256, BlobStore
from aoe_runner.runs.manifest import BankFile, BankInventory

HISTORY = "history.json"
INCOMING = ".incoming-"
VERSION_DIRECTORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}@[0-9]+\.[0-9a-f]{6}")  # NAME@N.<random>: ours alone


class NotAPulledBank(AoeRunnerError):
    """PATH is something a pull must not replace, or has nothing to roll back to (exit 1)."""

    exit_code = ExitCode.FINDING


@dataclass
class Pulled:
    path: Path
    version: str  # NAME@N now in place
    directory: Path  # where it is
    changed: bool  # False: it was in place already
    notes: list[str] = field(default_factory=list)


def versions_directory(path: Path) -> Path:
    return path.parent / f".{path.name}.versions"


def pull_version(
    version: BankVersion, path: Path, blobs: BlobStore, holder_command: str, on_wait: Callable[[], None] | None = None
) -> Pulled:
    """Put `version` in place at `path` (see the module's description)."""
    path = _absolute(path)
    with _pulling(path, on_wait) as place:
        current = _current(path, place)
        if current is not None and current not in _history(place):
            _remember(place, current)  # a pull interrupted between its swap and its history: told now
        if current is not None and _label_of(current) == version.label:
            return Pulled(path, version.label, place / current, changed=False)
        inventory = blobs.expand(
            BankInventory(directory=str(path), exists=True, taken_at=version.published_at, stored=version.inventory)
        )
        check_inventory(inventory, f"version {version.label}")
        written = place / f"{version.label}.{secrets.token_hex(3)}"
        incoming = place / f"{INCOMING}{written.name}"
        try:
            write_tree(incoming, inventory, blobs)
        except (OSError, ValueError, OverflowError) as error:  # an inventory no bank could hold: a hand-made one
            why = getattr(error, "strerror", None) or error
            raise InputError(f"version {version.label}", f"cannot be written: {why}; nothing was changed") from None
        os.rename(incoming, written)
        os.sync()  # every file on disk before PATH leads to them
        pulled = Pulled(path, version.label, written, changed=True)
        try:
            _swap(path, place, written.name, current, holder_command, pulled.notes)
        except BaseException:
            if _current(path, place) != written.name:  # refused (the bank in use) or interrupted before the swap
                shutil.rmtree(written, ignore_errors=True)
            raise
        _after_the_swap(place, path, [*_history(place), written.name], pulled.notes)  # a new name: never there yet
        return pulled


def roll_back(path: Path, holder_command: str, on_wait: Callable[[], None] | None = None) -> Pulled:
    """Put the version pulled before the one in place back at `path`."""
    path = _absolute(path)
    if not versions_directory(path).is_dir():
        raise NotAPulledBank(f"{path}: not a bank that aoe-runner bank pull put in place; nothing to roll back")
    with _pulling(path, on_wait) as place:
        current = _current(path, place)
        if current is None:
            raise NotAPulledBank(f"{path}: not a bank that aoe-runner bank pull put in place; nothing to roll back")
        history = [name for name in _history(place) if _is_version_directory(place, name)]
        earlier = [name for name in history if name != current]
        if not earlier:
            raise NotAPulledBank(f"{path}: {_label_of(current)} is the only version pulled here; nothing to roll back to")
        pulled = Pulled(path, _label_of(earlier[-1]), place / earlier[-1], changed=True)
        _swap(path, place, earlier[-1], current, holder_command, pulled.notes)
        _after_the_swap(place, path, [current, earlier[-1]], pulled.notes)  # the one swapped away from stays
        return pulled


# -- the place beside PATH ------------------------------------------------------------------------


@contextmanager
def _pulling(path: Path, on_wait: Callable[[], None] | None) -> Iterator[Path]:
    """The versions directory, held by this pull alone; what an interrupted pull left half-written is removed."""
    place = versions_directory(path)
    if os.path.lexists(place) and not stat.S_ISDIR(os.lstat(place).st_mode):
        raise NotAPulledBank(f"{place}: not a directory (a symbolic link, or a file): refusing to write through it")
    try:
        place.mkdir(mode=0o755, exist_ok=True)
    except OSError as error:
        raise InputError(str(place), f"cannot make the directory the versions are kept in: {error.strerror}") from None
    if place.is_symlink() or not place.is_dir():
        raise NotAPulledBank(f"{place}: not a directory (a symbolic link, or a file): refusing to write through it")
    _refuse_others(place)
    try:
        fd = os.open(place / "pull.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise NotAPulledBank(f"{place / 'pull.lock'}: cannot be used as the pull lock ({error.strerror}): refusing") from None
    try:
        if os.path.lexists(place / HISTORY) and not stat.S_ISREG(os.lstat(place / HISTORY).st_mode):
            raise NotAPulledBank(f"{place / HISTORY}: not a regular file: refusing to write beside it")
        flock_telling(fd, fcntl.LOCK_EX, on_wait)
        for entry in os.scandir(place):
            if entry.name.startswith(INCOMING) and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
        yield place
    finally:
        os.close(fd)


def _refuse_others(place: Path) -> None:
    """Another user who owns the versions directory, or may write in it, could change a version under a training job
    (or the history under a pull): refused, naming who."""
    info = os.lstat(place)
    if info.st_uid not in (os.geteuid(), 0):
        raise NotAPulledBank(f"{place}: owned by user {info.st_uid}, not by you: refusing to pull into it")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise NotAPulledBank(
            f"{place}: other users may write in it (mode {stat.S_IMODE(info.st_mode):o}): refusing to pull into it"
        )


def _current(path: Path, place: Path) -> str | None:
    """The version directory PATH leads to; None when PATH is not there. NotAPulledBank for anything a pull must
    not replace."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(info.st_mode):
        return None  # a bank of the user's: moved aside at the swap
    if not stat.S_ISLNK(info.st_mode):
        raise NotAPulledBank(f"{path}: a file, not a bank directory: refusing to replace it")
    target = os.readlink(path)
    parent, _, name = target.rpartition("/")
    if parent != place.name or not _is_version_directory(place, name):
        raise NotAPulledBank(f"{path}: a symbolic link to {target}, not a bank aoe-runner pulled: refusing to replace it")
    return name


def _label_of(directory_name: str) -> str:
    return directory_name.rpartition(".")[0]


def _history(place: Path) -> list[str]:
    try:
        names = json.loads((place / HISTORY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(names, list):
        return []
    return [name for name in names if isinstance(name, str) and VERSION_DIRECTORY.fullmatch(name)]


def _write_history(place: Path, names: list[str]) -> None:
    atomic_write_text(place / HISTORY, json.dumps(names) + "\n")


def _remember(place: Path, name: str) -> None:
    _write_history(place, [entry for entry in _history(place) if entry != name] + [name])


def _after_the_swap(place: Path, path: Path, history: list[str], notes: list[str]) -> None:
    """Write the history (the one in place last) and remove what is no longer kept. The swap is done: a failure here
    (a full disk) is a note, and the next pull or rollback puts the history right."""
    try:
        _write_history(place, history)
        _keep_two(place, path)
    except OSError as error:
        notes.append(f"the history beside {path} could not be written ({error.strerror or error}); the next pull puts it right")


def _keep_two(place: Path, path: Path) -> None:
    """Remove every version directory but the one in place and the one before it."""
    current = os.readlink(path).rpartition("/")[2]
    history = [name for name in _history(place) if _is_version_directory(place, name)]
    before = [name for name in history if name != current][-1:]
    keep = {current, *before}
    _write_history(place, [name for name in history if name in keep])
    for entry in os.scandir(place):
        if entry.name not in keep and VERSION_DIRECTORY.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)  # a version directory; nothing else there is ours to remove


# -- the swap -------------------------------------------------------------------------------------


def _swap(path: Path, place: Path, new: str, current: str | None, command: str, notes: list[str]) -> None:
    """Make PATH lead to place/new by renaming a new link over it, holding the bank lock of what PATH leads to now."""
    from aoe_runner.common.devlock import BankLock, LockHolder

    locked = place / current if current is not None else path
    with BankLock(locked).acquire(LockHolder.here(command)):
        link = path.parent / f".{path.name}.link-{secrets.token_hex(4)}"
        os.symlink(f"{place.name}/{new}", link)
        aside = None
        try:
            if current is None and os.path.lexists(path):  # the user's own bank directory: moved aside, once
                aside = place / f"{path.name}.before-pull.{secrets.token_hex(3)}"
                os.rename(path, aside)
            os.rename(link, path)
        except BaseException:
            link.unlink(missing_ok=True)
            if aside is not None and not os.path.lexists(path):
                os.rename(aside, path)  # as it was
            raise
        if aside is not None:
            notes.append(f"{path} was a directory; it was moved to {aside}")


def _is_version_directory(place: Path, name: str) -> bool:
    """place/name is a version directory a pull made: named so, and a directory itself (not a link to one)."""
    if not VERSION_DIRECTORY.fullmatch(name):
        return False
    try:
        return stat.S_ISDIR(os.lstat(place / name).st_mode)
    except OSError:
        return False


# -- writing a version ----------------------------------------------------------------------------


def check_inventory(inventory: BankInventory, where: str) -> None:
    """Every path relative, inside the bank and listed once; every content a sha256; every link's target inside the
    bank, reached without passing through another link, and matching its hash. InputError (exit 4) if not: a
    version from a shared store, or what a merge tool wrote, is not trusted to be so."""
    seen: set[str] = set()
    for name in [file.path for file in inventory.files] + list(inventory.directories or []):
        parts = name.split("/")
        if name.startswith("/") or any(part in ("", ".", "..") for part in parts) or "\0" in name or name in seen:
            raise InputError(where, f"{name!r} is not a path inside a bank, or is listed twice")
        seen.add(name)
    links = {file.path for file in inventory.files if file.link is not None}
    for file in inventory.files:
        if not SHA256.fullmatch(file.sha256):
            raise InputError(where, f"{file.path!r}: {file.sha256[:80]!r} is not a sha256")
        if file.link is None:
            continue
        if not _link_stays_inside(file.path, file.link, links):
            raise InputError(where, f"{file.path!r} links to {file.link!r}, outside the bank or through another link")
        if hashlib.sha256(os.fsencode(file.link)).hexdigest() != file.sha256:
            raise InputError(where, f"{file.path!r}: its link target does not match its sha256")


def _link_stays_inside(path: str, target: str, links: set[str]) -> bool:
    """Whether the link at path, to target, leads inside the bank, walking its target one component at a time and
    never through another link of the bank (whose own target could lead anywhere)."""
    if target.startswith("/") or "\0" in target or not target:
        return False
    reached = path.split("/")[:-1]
    parts = [part for part in target.split("/") if part not in ("", ".")]
    for number, part in enumerate(parts):
        if part == "..":
            if not reached:
                return False
            reached.pop()
            continue
        reached.append(part)
        if number < len(parts) - 1 and "/".join(reached) in links:
            return False
    return True


def write_tree(incoming: Path, inventory: BankInventory, blobs: BlobStore) -> None:
    """The version's directories, then its files (each checked against its sha256), then its symbolic links, last,
    so that no file is written through one. A failure removes what was written."""
    incoming.mkdir(mode=0o700)
    root = os.open(incoming, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for directory in sorted(inventory.directories or []):
            os.close(open_path(root, incoming, directory, create=True))
        files = [file for file in inventory.files if file.link is None]
        for file in files:
            _write_file(root, incoming, file, blobs)
        for file in inventory.files:
            if file.link is not None:
                parent_path, _, name = file.path.rpartition("/")
                parent = open_path(root, incoming, parent_path, create=True)
                try:
                    os.symlink(file.link, name, dir_fd=parent)
                finally:
                    os.close(parent)
        os.chmod(incoming, 0o755)
    except BaseException:
        shutil.rmtree(incoming, ignore_errors=True)
        raise
    finally:
        os.close(root)


def _write_file(root: int, incoming: Path, file: BankFile, blobs: BlobStore) -> None:
    where = blobs.blob_path(file.sha256)
    try:
        source = os.open(where, READ_FLAGS)
    except OSError as error:
        raise InputError(str(where), f"cannot read the content of {file.path}: {error.strerror}; nothing was changed") from None
    parent_path, _, name = file.path.rpartition("/")
    parent = open_path(root, incoming, parent_path, create=True)
    try:
        regular_stat(source, where)
        target = os.open(name, CREATE_FLAGS, 0o600, dir_fd=parent)
        os.fchmod(target, file.mode & 0o777 if file.mode is not None and file.mode >= 0 else 0o644)  # no set-id bits
        _, digest = copy_file(source, where, target, incoming / file.path)
    finally:
        os.close(source)
        os.close(parent)
    if digest != file.sha256:
        raise InputError(str(where), f"damaged: the content of {file.path} does not match its sha256; nothing was changed")


def _absolute(path: Path) -> Path:
    """PATH made absolute without resolving its last component (which is the link a pull swaps)."""
    path = Path(os.path.abspath(path))
    if path.name in ("", ".", ".."):
        raise NotAPulledBank(f"{path}: not a path a bank can be pulled to (it needs a name of its own)")
    return Path(os.path.realpath(path.parent)) / path.name
