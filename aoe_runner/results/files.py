"""Find result files from the paths a user gives (reading one is regular_files').

Kept apart from the loader, so that finding and reading files (all a report served from its cache needs) does not
import the normaliser and pydantic.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from aoe_runner.common.regular_files import path_kind
from aoe_runner.errors import InputError

RESULT_FILE_GLOB = "aoe_result_*.json"
LEGACY_FILE_GLOB = "tune_result_*.json"  # legacy Auto Tune's
RESULT_FILE_GLOBS = (RESULT_FILE_GLOB, LEGACY_FILE_GLOB)  # what a directory search finds
_GLOB_CHARACTERS = frozenset("*?[")
_PREFIXES = tuple(pattern.removesuffix("*.json") for pattern in RESULT_FILE_GLOBS)
_SEARCH_KEEPS = ("regular", "unknown")  # a directory search keeps files (through links too) and what it cannot look at


def find_result_files(arguments: Iterable[str]) -> tuple[list[Path], list[InputError]]:
    """Expand files, directories (searched recursively) and glob patterns, in a stable order.

    A file is found once however it is reached: under several spellings (`a.json`, `./x/../a.json`, its absolute
    path), through a symbolic link or a hard link, by two arguments; of its names, the one kept is the same in any
    order of the arguments (preferred_name), since a name can carry the file's time.
    Every argument that names nothing usable, and every directory below one that cannot be searched, becomes an
    InputError; the others still count.
    """
    found: dict[object, Path] = {}
    errors: list[InputError] = []
    for argument in arguments:
        try:
            for path in _expand(argument, errors):
                identity = file_identity(path)
                held = found.get(identity)
                found[identity] = path if held is None or held == path else min(held, path, key=preferred_name)
        except InputError as error:
            errors.append(error)
    once: dict[str, InputError] = {}  # `report d d`, `d/**`: one line for each problem, the first time it was met
    for problem in errors:
        once.setdefault(problem.message, problem)
    return list(found.values()), list(once.values())


def preferred_name(path: Path) -> tuple[bool, bool, str, int, str]:
    """Of two names of one file: one that carries its time (`aoe_result_<kind>_<time>_<pid>.json`), then its own path
    (not through a link), then the first absolute path in sorted order, then the shorter spelling of it."""
    from aoe_runner.results.keys import file_timestamp  # only for a file reached by two names

    absolute = os.path.normpath(os.path.abspath(path))
    through_link = absolute != os.path.realpath(path)
    return (file_timestamp(path.name) is None, through_link, absolute, len(str(path)), str(path))


def file_identity(path: str | Path) -> object:
    """The file itself (device and inode) where it can be looked at; else its absolute, normalised path."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return os.path.normpath(os.path.abspath(path))
    return (info.st_dev, info.st_ino)


def _expand(argument: str, errors: list[InputError]) -> list[Path]:
    path = Path(argument)
    kind = path_kind(path)
    if kind == "directory":
        return _search_directory(path, errors)
    if kind is not None:  # reading it refuses anything but a regular file, in one line
        return [path]
    if _GLOB_CHARACTERS & set(argument):
        matches = _glob(argument, errors)
        if not matches:
            raise InputError(argument, "no files match this pattern")
        return [found for match in matches for found in _expand_match(Path(match), errors)]
    raise InputError(argument, "no such file or directory")


def _glob(pattern: str, errors: list[InputError]) -> list[Path]:
    """The paths a pattern matches, sorted. `**` goes down into directories but never through a symbolic link to
    one (pathlib's rule; glob.glob's would count a file once per loop through a `self -> .` link, and never end
    with two such links); a directory below that cannot be searched adds an error to `errors`, as in a directory
    search (pathlib passes over it in silence)."""
    parts = Path(pattern).parts
    fixed = next((index for index, part in enumerate(parts) if _GLOB_CHARACTERS & set(part)), len(parts))
    base = Path(*parts[:fixed]) if fixed else Path()
    rest = str(Path(*parts[fixed:])) if fixed < len(parts) else ""
    if not rest:
        return [base] if path_kind(base) is not None else []
    try:
        matches = sorted(base.glob(rest))
    except (OSError, ValueError):  # a base that cannot be listed matches nothing
        return []
    if "**" in Path(rest).parts:
        unsearchable: list[OSError] = []
        for _ in os.walk(base, onerror=unsearchable.append):
            pass
        errors += (InputError(str(error.filename), f"cannot search: {error.strerror or error}") for error in unsearchable)
    return matches


def _expand_match(path: Path, errors: list[InputError]) -> list[Path]:
    return _search_directory(path, errors) if path_kind(path) == "directory" else [path]


def _search_directory(directory: Path, errors: list[InputError]) -> list[Path]:
    """The result files in `directory` and below (symbolic links to directories are not followed); a directory
    below it that cannot be searched adds an error to `errors`, and a file that cannot be looked at is kept, so
    that reading it says why."""
    unsearchable: list[OSError] = []
    files = sorted(
        Path(root, name)
        for root, _, names in os.walk(directory, onerror=unsearchable.append)
        for name in names
        if name.startswith(_PREFIXES) and name.endswith(".json") and path_kind(os.path.join(root, name)) in _SEARCH_KEEPS
    )
    errors += (InputError(str(error.filename), f"cannot search: {error.strerror or error}") for error in unsearchable)
    if not files and not unsearchable:
        raise InputError(str(directory), f"no {' or '.join(RESULT_FILE_GLOBS)} files in this directory or below it")
    return files
