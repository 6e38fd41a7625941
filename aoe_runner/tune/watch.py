"""Watch a work directory for AOE result files while the script runs, and count what they say so far.

Files are re-read with the tolerant loader when their size or mtime changes, at most once a second,
and less often when reading them takes long (never more than about 5% of the time), so a huge file
that grows all the time cannot make supervision expensive. `BackgroundWatcher` polls in a thread of
its own, so a slow or hostile file never delays the supervisor, and no failure to read a file ever
leaves the watcher: it becomes that file's error and one problem line. The result-file models load with the
first file found, in the watcher's thread, not before the script starts.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from aoe_runner.common.regular_files import mode_kind
from aoe_runner.errors import InputError
from aoe_runner.runs.manifest import Progress

if TYPE_CHECKING:
    from aoe_runner.results.model import ResultFile

RESULT_PREFIX = "aoe_result_"
MIN_INTERVAL_S = 1.0
COST_FACTOR = 20  # wait this many times the last read's duration before reading the same file again


@dataclass
class WatchedFile:
    path: Path
    signature: tuple[int, int] = (-1, -1)  # size, mtime_ns when last read
    next_read_at: float = 0.0
    progress: Progress = field(default_factory=Progress)
    loaded: ResultFile | None = None
    error: str | None = None


class ResultWatcher:
    def __init__(self, work_dir: Path) -> None:
        self.directories = [work_dir, work_dir / "aoe_data"]  # AOE.md §1: the docs name both
        self.problems: list[str] = []  # one line per file and kind of failure that is not the file's own fault
        self._odd: set[Path] = set()  # result names that are no file: a FIFO, a directory, a device, a loop
        self._watching = False  # the first scan, before the run, finds what is not the run's: nothing to warn of
        self._existing = dict(self._scan())  # files there before the run are not its results
        self._watching = True
        self._files: dict[Path, WatchedFile] = {}

    def poll(self, force: bool = False) -> bool:
        """Read new and changed result files; True when the counts changed."""
        before = self.progress
        now = time.monotonic()
        for path, signature in self._scan():
            if self._existing.get(path) == signature:
                continue
            watched = self._files.setdefault(path, WatchedFile(path))
            if signature != watched.signature and (force or now >= watched.next_read_at):
                self._read(watched, signature)
        return self.progress != before

    @property
    def progress(self) -> Progress:
        total = Progress()
        for watched in self._files.values():
            total = total.plus(watched.progress)
        return total

    @property
    def files(self) -> list[WatchedFile]:
        return sorted(self._files.values(), key=lambda watched: str(watched.path))

    def _scan(self) -> list[tuple[Path, tuple[int, int]]]:
        """Result files by path; a file reached by a second name (a symbolic or hard link) is counted once, under
        the name that sorts first, with one note of the other."""
        found = []
        seen: dict[tuple[int, int], Path] = {}
        for directory in self.directories:
            try:
                entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(RESULT_PREFIX) and entry.name.endswith(".json"):
                    try:
                        info = entry.stat()
                    except OSError as error:  # a symbolic link in a loop, or to nothing
                        self._note_odd(Path(entry.path), f"cannot be looked at ({error.strerror or error})")
                        continue
                    first = seen.setdefault((info.st_dev, info.st_ino), Path(entry.path))
                    if first != Path(entry.path):
                        self._note_odd(Path(entry.path), f"the same file as {first.name} (a link), counted once")
                    elif stat.S_ISREG(info.st_mode):
                        found.append((Path(entry.path), (info.st_size, info.st_mtime_ns)))
                    else:  # a FIFO or a device would block the reader, or never end
                        self._note_odd(Path(entry.path), f"{mode_kind(info.st_mode)}, not a result file")
        return found

    def _note_odd(self, path: Path, what: str) -> None:
        """One warning for a result name that is no file and was not there before the run; it is never read."""
        if path in self._odd:
            return
        self._odd.add(path)
        if self._watching:
            counted = "" if what.endswith("counted once") else "; its reports, if any, are not counted"
            self.problems.append(f"{path}: {what}: not read{counted}")

    def _read(self, watched: WatchedFile, signature: tuple[int, int]) -> None:
        started = time.monotonic()
        watched.signature = signature
        try:
            from aoe_runner.results.loader import load_result_file

            watched.loaded = load_result_file(watched.path)
            watched.progress = progress_of(watched.loaded)
            watched.error = None
        except InputError as error:  # empty or not yet JSON: the next change may fix it
            watched.error = error.reason
        except Exception as error:  # noqa: BLE001 (a bug of ours on a strange file must not reach the script)
            watched.error = f"cannot be read: {type(error).__name__}: {error}"
            problem = f"{watched.path}: {watched.error}"
            if problem not in self.problems:
                self.problems.append(problem)
        spent = time.monotonic() - started
        watched.next_read_at = started + max(MIN_INTERVAL_S, COST_FACTOR * spent)


class BackgroundWatcher:
    """Polls a ResultWatcher in a thread, one poll at a time; the caller reads its state only between polls."""

    def __init__(self, watcher: ResultWatcher) -> None:
        self.watcher = watcher
        self._thread: threading.Thread | None = None
        self._changed = False

    def tick(self) -> bool:
        """Start a poll unless one is under way; True when a finished poll changed the counts."""
        if self._thread is not None and self._thread.is_alive():
            return False
        changed, self._changed = self._changed, False
        self._thread = threading.Thread(target=self._poll, name="aoe-runner result watcher", daemon=True)
        self._thread.start()
        return changed

    def finish(self) -> None:
        """Wait for the poll under way, then read every changed file once more, now."""
        if self._thread is not None:
            self._thread.join()
        self._changed = False
        self._poll(force=True)

    def _poll(self, force: bool = False) -> None:
        try:
            self._changed |= self.watcher.poll(force=force)
        except Exception as error:  # noqa: BLE001 (only a failure to list the directory gets here)
            problem = f"watching {self.watcher.directories[0]} failed: {type(error).__name__}: {error}"
            if problem not in self.watcher.problems:
                self.watcher.problems.append(problem)


def progress_of(result_file: ResultFile) -> Progress:
    from aoe_runner.results.model import TuningStatus, UpdateMode

    progress = Progress(reports=len(result_file.reports))
    for report in result_file.reports:
        if report.opat is not None:
            for operator in report.opat.operators:
                if operator.update_mode is UpdateMode.ADD:
                    progress.operators_added += 1
                else:
                    progress.operators_updated += 1
            failed = len(report.opat.failed_operators)
            progress.failures += failed or (report.opat.status is TuningStatus.FAILED)
        if report.sgat is not None:
            for subgraph in report.sgat.subgraphs:
                if subgraph.update_mode is UpdateMode.ADD:
                    progress.subgraphs_added += 1
                else:
                    progress.subgraphs_updated += 1
    return progress
