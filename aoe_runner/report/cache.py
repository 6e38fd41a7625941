"""A cache of parsed result files in the aoe-runner home, so that a second `report` reads only what changed.

Two kinds of entry, each one file written elsewhere and renamed into place (so a reader sees a whole entry or
none, and two processes can share the cache):
- `sets/<hash of the members>`: the merged BankState of a set of files, with its members listed beside it, so a
  report over the same files plus new ones reads the set and parses only the new files. A set made so is stored
  as what its new files add and the name of the set they add to (`.state` holds both, so the two always agree),
  on at most MAX_CHAIN sets below it, and only while what it adds is small beside them: a second report writes
  what it parsed, not the whole bank again;
- `files/<hash of path, device, inode>`: one result file's ParsedFile, for a report that no stored set fits (one
  of its files changed, as a live result file does). A file's entry is written when the file is parsed while a
  stored set lists it unchanged, that is once it has proved to be read again: a first report writes its set alone
  (most files never need their own entries).

An entry is served only while its file's device, inode, size, mtime and ctime (to the nanosecond) are as they
were when it was read. ctime is not settable: replacing a file's content and restoring its mtime with
`os.utime` changes it. A filesystem's clock ticks coarsely, though, so a file changed within RACY_NS of being
read could change again in the same tick; for such a file, and for any small one, the entry also keeps a hash of
the content read and is served only while the file still hashes the same (git's "racily clean" rule).

Entries live under a directory named by a hash of the code that makes them (`code_identity`), so a new
version of aoe-runner, or an edited checkout, never reads what other code cached. Each file's mtime as local
time (it stands for a missing timestamp) is hashed into a set's name and kept in a file's entry, so another time
zone, or new rules of the same zone, is a miss. The cache is bounded: when its files pass `AOE_RUNNER_CACHE_MB`
(default 512) MiB, the least recently used go first. `AOE_RUNNER_CACHE=off` turns it off. It is only an
accelerator: any entry that cannot be read, written or trusted is a miss, never an error. It trusts what its
owner wrote: it is used only in a directory of the user's own that no one else can write to, below directories
that only root or the user can change (sticky ones aside); a set's state carries a checksum of itself and its
name, and a file's entry one of itself, so a damaged or misplaced one is a miss.

Its blind spot is git's: a file over HASHED_SIZE, last changed more than RACY_NS before it was read, is trusted by
its identity alone. A write through a shared memory mapping (mmap) to a page already written since the file was
last flushed changes neither mtime nor ctime on Linux until the page is written back, so such a file can be
served as it was; write() always changes them.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aoe_runner.errors import UsageError
from aoe_runner.report.cache_entries import (
    ENCODER,
    SET_NAME,
    UNWRITABLE,
    WHOLE,
    WRITING,
    checked,
    first_line,
    joined_state,
    read_checked,
    read_entry,
    remove,
    split_state,
    touch,
    write_entry,
)
from aoe_runner.report.merge import BankState
from aoe_runner.report.stamps import Identity, Stamp, blake2b
from aoe_runner.results.parsed import ParsedFile
from aoe_runner.results.report_facts import moment_of_mtime

ENABLE_VARIABLE = "AOE_RUNNER_CACHE"
SIZE_VARIABLE = "AOE_RUNNER_CACHE_MB"
DEFAULT_LIMIT_MB = 512
MAX_LIMIT_MB = 2.0**40  # a larger AOE_RUNNER_CACHE_MB is taken as this (an exbibyte)
MAX_SETS = 4  # merged sets kept (with the sets they add to); the oldest go first
MAX_CHAIN = 4  # a set adds to at most this many stored sets below it; one that would add to more is stored whole
DELTA_SHARE = 4  # a set is stored as what it adds only when that is at most 1/DELTA_SHARE of the sets below it
_ENTRY_VERSION = 5
ABANDONED_AFTER_S = 600  # an entry still being written after this long was left by a killed process


_ON = ("1", "on", "yes", "true")
_OFF = ("0", "off", "no", "false")


def _limit_mb(text: str) -> float:
    """AOE_RUNNER_CACHE_MB: megabytes, DEFAULT_LIMIT_MB when unset, at most MAX_LIMIT_MB; UsageError for anything
    that is not a number of them (`64MB`, `abc`, nan, a negative number)."""
    if not text.strip():
        return DEFAULT_LIMIT_MB
    try:
        limit_mb = float(text) if text.isascii() else math.nan
    except ValueError:
        limit_mb = math.nan
    if not limit_mb >= 0:
        raise UsageError(f"{SIZE_VARIABLE}={text!r}: not a number of megabytes (the default is {DEFAULT_LIMIT_MB})")
    return min(limit_mb, MAX_LIMIT_MB)


def code_identity() -> str:
    """A hash of the code that decides what a cached entry holds (the merge and results/): entries written by other
    code, an older aoe-runner or a changed checkout, live in another directory and are never served."""
    from aoe_runner import __version__

    package = Path(__file__).resolve().parent.parent
    digest = blake2b(f"{_ENTRY_VERSION} {__version__}".encode(), digest_size=8)  # also where sources are not shipped
    merging = [package / "report" / name for name in ("merge.py", "entries.py", "rules.py", "cache_entries.py", "stamps.py")]
    for path in sorted([*merging, *(package / "results").glob("*.py")]):
        digest.update(path.name.encode())
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"\0unreadable")
    return digest.hexdigest()


_CODE_NAME = re.compile(r"[0-9a-f]{16}")


class StoredSet:
    """A stored set read back: the merged state of its members, their stamps, and the names of the set and of the
    sets it adds to, nearest first (`chain`)."""

    __slots__ = ("state", "stamps", "chain", "stored_bytes")

    def __init__(self, state: BankState, stamps: list[Stamp], chain: list[str], stored_bytes: int) -> None:
        self.state, self.stamps, self.chain, self.stored_bytes = state, stamps, chain, stored_bytes

    @property
    def name(self) -> str:
        return self.chain[0]


class ReportCache:
    def __init__(self, base: Path, limit_bytes: int, every_file: bool = False) -> None:
        """`every_file`: store each parsed file's entry at once, not only once a stored set lists it."""
        self.base = base
        self.root = base / code_identity()
        self.files = self.root / "files"
        self.sets = self.root / "sets"
        self.limit_bytes = limit_bytes
        self.every_file = every_file
        self.listed: set[tuple[str, Identity]] = set()  # files that a stored set lists as they are now (get_set)

    @classmethod
    def from_environment(cls) -> ReportCache | None:
        """The cache of the aoe-runner home; None when turned off, or when its directory, or one above it, is not
        safe from other users (see _private_directory)."""
        setting = os.environ.get(ENABLE_VARIABLE, "")
        if setting.strip().lower() in _OFF:
            return None
        if setting.strip() and setting.strip().lower() not in _ON:  # a typo must not leave on a cache meant off
            raise UsageError(f"{ENABLE_VARIABLE}={setting!r}: neither on nor off (off turns report's cache off)")
        from aoe_runner.common.home import runner_home

        limit_mb = _limit_mb(os.environ.get(SIZE_VARIABLE, ""))
        base = _private_directory(runner_home() / "cache" / "report")
        return cls(base, int(limit_mb * 2**20)) if base is not None else None

    # one file's parsed state

    def get_file(self, path: str, info: os.stat_result) -> tuple[ParsedFile, Stamp] | None:
        """The parsed file and its stamp, while the file at `path` (status `info`) still holds what was parsed."""
        entry_path = self._file_entry(path, info)
        entry = read_checked(entry_path)
        if entry is None:
            return None
        try:
            version, wire, moment, body = entry
            stamp = Stamp.from_wire(wire)
            if version != _ENTRY_VERSION or not stamp.holds(path, info) or moment != _local_mtime(info.st_mtime_ns):
                return None  # other code's, a changed file, or parsed in another time zone
            parsed = ParsedFile.from_bytes(body)
        except (ValueError, TypeError, RecursionError):
            return None
        touch(entry_path)
        return parsed, stamp

    def put_file(self, stamp: Stamp, info: os.stat_result, parsed: ParsedFile) -> int:
        """Store a parsed file once it has proved to be read again (see the module's docstring); the bytes written (0
        when not stored, not cacheable or the cache cannot be written)."""
        if not parsed.cacheable or not (self.every_file or (stamp.path, stamp.identity) in self.listed):
            return 0
        moment = _local_mtime(info.st_mtime_ns)
        entry = lambda: checked([_ENTRY_VERSION, stamp.to_wire(), moment, parsed.to_bytes()])  # noqa: E731
        return write_entry(self._file_entry(stamp.path, info), entry)

    def _file_entry(self, path: str, info: os.stat_result) -> Path:
        """Where a file's entry is kept: one place per file, rewritten as the file changes."""
        name = f"{path}\0{info.st_dev}\0{info.st_ino}".encode("utf-8", "surrogateescape")
        return self.files / blake2b(name, digest_size=16).hexdigest()

    # merged sets of files

    def get_set(self, current: dict[str, os.stat_result]) -> StoredSet | None:
        """The largest stored set whose members are all among `current` and unchanged (the next largest when one
        cannot be read)."""
        fitting: list[tuple[int, str, list[Stamp]]] = []
        checked: dict[tuple[str, Identity, bytes | None], bool] = {}  # each file hashed once, however many sets list it
        for _, _, members_path in self._sets_by_use():
            members, unchanged = _members(members_path, current, checked)
            self.listed.update((stamp.path, stamp.identity) for stamp in unchanged)
            if members is not None:
                fitting.append((len(members), members_path.stem, members))
        for _, name, members in sorted(fitting, key=lambda fit: -fit[0]):
            stored = self._load(name, members)
            if stored is not None:
                return stored
        return None

    def _load(self, name: str, stamps: list[Stamp]) -> StoredSet | None:
        """A stored set's state: the whole set it adds to, then what each set above adds, in the order written."""
        chain: list[str] = []
        parts: list[memoryview] = []
        below: str | None = name
        stored_bytes = 0
        while below is not None:
            if len(chain) > MAX_CHAIN:
                return None
            data = read_entry(self.sets / f"{below}.state")
            split = split_state(below, data) if isinstance(data, bytes) else None
            if split is None:
                return None
            chain.append(below)
            below, body = split
            parts.append(body)
            stored_bytes += len(data)
        try:
            state = BankState.from_bytes(parts[-1])
            for part in reversed(parts[:-1]):
                state.absorb(BankState.from_bytes(part))
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError):
            return None
        for link in reversed(chain):  # the set read last: the most recently used (trim keeps what it adds to)
            touch(self.sets / f"{link}.state", self.sets / f"{link}.members")
        return StoredSet(state, stamps, chain, stored_bytes)

    def put_set(
        self, stamps: Iterable[Stamp], state: BankState, adds_to: StoredSet | None = None, added: BankState | None = None
    ) -> int:
        """Store the merged `state` of the files `stamps` name: as what `added` adds to the stored set `adds_to` when
        both are given, that set has fewer than MAX_CHAIN sets below it, what is added is small beside it (see
        DELTA_SHARE) and the chain takes at most half the cache's bound (trim would break it up), else whole. The
        bytes written (0: not stored)."""
        if not state.cacheable:
            return 0
        wire = sorted((stamp.to_wire() for stamp in stamps), key=lambda item: item[0])
        try:
            name = _set_name(wire)
            body, head = None, WHOLE
            if adds_to is not None and added is not None and len(adds_to.chain) <= MAX_CHAIN and name != adds_to.name:
                body = added.to_bytes()
                chain_bytes = adds_to.stored_bytes + len(body)
                if len(body) * DELTA_SHARE <= adds_to.stored_bytes and chain_bytes <= self.limit_bytes // 2:
                    head = adds_to.name.encode("ascii")
                else:
                    body = None
            if body is None:
                body = state.to_bytes()
        except UNWRITABLE:
            return 0
        written = write_entry(self.sets / f"{name}.state", lambda: joined_state(name, head, body))
        return written and written + write_entry(self.sets / f"{name}.members", lambda: [_ENTRY_VERSION, wire])

    def _sets_by_use(self) -> list[tuple[int, int, Path]]:
        """Each stored set's last use (its members' mtime), the size of its member list and its members path: the
        latest used first, and of sets used in the same tick of the clock the largest first (the top of a chain)."""
        try:
            found = [
                (info.st_mtime_ns, info.st_size, Path(entry.path))
                for entry in os.scandir(self.sets)
                if entry.name.endswith(".members") and (info := entry.stat())
            ]
        except OSError:
            return []
        return sorted(found, key=lambda item: (item[0], item[1]), reverse=True)

    def _below(self, name: str) -> list[str]:
        """The names of the stored sets that the set `name` adds to, nearest first (as far as they can be read)."""
        below: list[str] = []
        while len(below) <= MAX_CHAIN:
            head = first_line(self.sets / f"{name}.state").partition(b" ")[0]
            if not SET_NAME.fullmatch(head):
                break
            name = head.decode("ascii")
            below.append(name)
        return below

    # the bound

    def trim(self) -> None:
        """Keep the MAX_SETS sets last used (with the sets they add to) and the whole cache under its limit, least
        recently used first out; remove what other code wrote (another aoe-runner sharing this home loses its
        entries too, and reads cost it a miss)."""
        with contextlib.suppress(OSError):
            for other in os.scandir(self.base):
                if other.name != self.root.name and _CODE_NAME.fullmatch(other.name) and other.is_dir(follow_symlinks=False):
                    shutil.rmtree(other.path, ignore_errors=True)
        by_use = self._sets_by_use()
        kept: dict[str, tuple[int, int]] = {}  # set name: last use (its own, or a later one of a set adding to it), level
        for used, _, members_path in by_use[:MAX_SETS]:
            chain = [members_path.stem, *self._below(members_path.stem)]
            for level, name in enumerate(chain):
                kept[name] = max(kept.get(name, (0, 0)), (used, len(chain) - level))
        for _, _, members_path in by_use:
            if members_path.stem not in kept:
                remove(members_path, members_path.with_suffix(".state"))
        abandoned_before = time.time_ns() - ABANDONED_AFTER_S * 10**9
        units: dict[str, tuple[int, int, int, list[Path]]] = {}  # an entry, or a set's two files: removed together
        for directory in (self.files, self.sets):
            with contextlib.suppress(OSError):
                for entry in os.scandir(directory):
                    with contextlib.suppress(OSError):
                        info = entry.stat()
                        path = Path(entry.path)
                        if entry.name.startswith(WRITING) or directory == self.sets and entry.name.partition(".")[0] not in kept:
                            if info.st_mtime_ns < abandoned_before:  # left by a killed writer, or half a set
                                remove(path)
                                continue
                        name = entry.name.partition(".")[0] if directory == self.sets else entry.path
                        used, level = kept.get(name, (info.st_mtime_ns, 0))
                        _, _, size, paths = units.get(name, (0, 0, 0, []))
                        units[name] = (max(used, info.st_mtime_ns), level, size + info.st_size, [*paths, path])
        total = sum(size for _, _, size, _ in units.values())
        for _, _, size, paths in sorted(units.values(), key=lambda unit: (unit[0], -unit[1])):  # a chain's top first
            if total <= self.limit_bytes:
                break
            remove(*paths)
            total -= size


def _members(
    members_path: Path, current: dict[str, os.stat_result], checked: dict[tuple[str, Identity, bytes | None], bool]
) -> tuple[list[Stamp] | None, list[Stamp]]:
    """A stored set's members when every one is among `current` and unchanged (else None), and those unchanged;
    `checked` keeps each file's answer for the other sets."""
    entry = read_entry(members_path)
    try:
        version, wire = entry
        if version != _ENTRY_VERSION or type(wire) is not list:
            return None, []  # written by other code
        stamps = [Stamp.from_wire(item) for item in wire]
        if _set_name(wire) != members_path.stem:
            return None, []  # not the list this set's name was made from
    except (ValueError, TypeError, *UNWRITABLE):
        return None, []
    unchanged = []
    for stamp in stamps:
        key = (stamp.path, stamp.identity, stamp.digest)
        holds = checked.get(key)
        if holds is None:
            info = current.get(stamp.path)
            holds = checked[key] = info is not None and stamp.holds(stamp.path, info)
        if holds:
            unchanged.append(stamp)
    return (stamps if len(unchanged) == len(stamps) else None), unchanged


def _set_name(wire: list[Any]) -> str:
    """A set's name: a hash of its members' stamps as written (Stamp.to_wire), and of each member's mtime as local
    time."""
    moments = [_local_mtime(mtime_ns) for _, (_, _, _, mtime_ns, _), _ in wire]
    return blake2b(ENCODER.encode([moments, wire]), digest_size=16).hexdigest()


def _local_mtime(mtime_ns: int) -> str:
    """A file's mtime as the local time that stands for a missing timestamp in its reports: the moment parsing
    takes from os.stat's float mtime, rebuilt as os.stat builds it, so that what was cached in one time zone (or
    under other rules of the same zone) is never served in another."""
    seconds, nanoseconds = divmod(mtime_ns, 1_000_000_000)
    moment = moment_of_mtime(seconds + nanoseconds * 1e-9)
    return "-" if moment is None else moment.isoformat()


def _private_directory(path: Path) -> Path | None:
    """`path` (made if missing) resolved, when it is a directory of this user's that no one else can write to, on a
    path that no one else can change: each directory above it is root's or this user's, and writable by no one
    else unless sticky (as /tmp is). Else None: another user who could rename a directory above it could swap in
    a cache of theirs after this check."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        real = Path(os.path.realpath(path))
        info = real.lstat()
        if not (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022):
            return None
        for above in real.parents:
            mode, owner = (above_info := above.lstat()).st_mode, above_info.st_uid
            if not stat.S_ISDIR(mode) or owner not in (0, os.geteuid()) or (mode & 0o022 and not mode & stat.S_ISVTX):
                return None
    except OSError:
        return None
    return real
