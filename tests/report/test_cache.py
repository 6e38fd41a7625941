"""The cache of parsed result files: never stale, shared safely by two processes, bounded, and used."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

from aoe_runner.common.jsontext import dump_json
from aoe_runner.errors import UsageError
from aoe_runner.report import cache as cache_module
from aoe_runner.report import cache_entries, stamps
from aoe_runner.report.api import merge_files
from aoe_runner.report.cache import ReportCache
from aoe_runner.report.summary_data import summary_of
from tests.conftest import SAMPLES

ROOT = Path(__file__).resolve().parents[2]


def _document(after: float) -> dict[str, object]:
    """A training file whose one operator's after-time is `after` (same length for every after of 5 characters)."""
    performance = {
        "performance_before_tune(us)": 50.0,
        "performance_after_tune(us)": after,
        "performance_improvement": f"{(50.0 / after - 1) * 100:.2f}%",
        "update_mode": "add",
    }
    operator = {"op_name": "net/op", "op_type": "MatMulV2", "tune_performance": {"Schedule": performance}}
    return {"report_20260310120000000_1": [{"basic": {"tuning_name": "n"}}, {"OPAT": {"repo_modified_operators": [operator]}}]}


def _after(cache: ReportCache | None, paths: list[Path]) -> list[float]:
    state, _, errors = merge_files(paths, workers=1, cache=cache)
    assert not errors
    return [entry.after_us for entry in summary_of(state).operators]


@pytest.fixture
def cache(tmp_path: Path) -> ReportCache:
    """A cache that stores every parsed file at once, so that each report's files are served from their own entries."""
    return ReportCache(tmp_path / "cache", limit_bytes=2**30, every_file=True)


@pytest.mark.parametrize("racy", [True, False], ids=["changed just after reading", "changed long after"])
def test_a_file_replaced_with_the_same_size_and_mtime_is_never_served_stale(
    tmp_path: Path, cache: ReportCache, monkeypatch: pytest.MonkeyPatch, racy: bool
) -> None:
    if not racy:  # as if the first read happened long after the file's last change: no content hash kept
        monkeypatch.setattr(stamps, "RACY_NS", 0)
        monkeypatch.setattr(stamps, "HASHED_SIZE", 0)
    path = tmp_path / "aoe_result_opat_20260310120000000_1.json"
    path.write_text(json.dumps(_document(40.25)))
    before = os.stat(path)
    assert _after(cache, [path]) == [40.25]
    replacement = tmp_path / "replacement.json"
    replacement.write_text(json.dumps(_document(30.75)))
    assert replacement.stat().st_size == before.st_size
    os.replace(replacement, path)  # a new inode, as an editor or `cp` over a rename writes it
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _after(cache, [path]) == [30.75]
    with open(path, "r+") as handle:  # the same inode rewritten in place, mtime restored
        handle.write(json.dumps(_document(20.50)))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size and os.stat(path).st_mtime_ns == before.st_mtime_ns
    assert _after(cache, [path]) == [20.5]


def test_a_second_report_reads_the_set_and_parses_only_the_new_file(
    samples: Path, cache: ReportCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = sorted(samples.rglob("aoe_result_*.json"))
    first, _, _ = merge_files(paths[:-1], workers=1, cache=cache)
    parsed: list[str] = []
    real = cache_module.ReportCache.get_file

    def counting(self: ReportCache, path: str, info: os.stat_result) -> object:
        parsed.append(path)
        return real(self, path, info)

    monkeypatch.setattr(cache_module.ReportCache, "get_file", counting)
    second, count, _ = merge_files(paths, workers=1, cache=cache)
    assert parsed == [str(paths[-1])]  # the others came from the stored set
    assert count == len(paths)
    assert dump_json(summary_of(second)) == dump_json(summary_of(merge_files(paths, workers=1)[0]))
    parsed.clear()
    again, _, _ = merge_files(paths, workers=1, cache=cache)
    assert parsed == []
    assert dump_json(summary_of(again)) == dump_json(summary_of(second))


def test_parsed_files_are_reused_when_no_stored_set_fits(samples: Path, cache: ReportCache) -> None:
    paths = sorted(samples.rglob("aoe_result_*.json"))
    merge_files(paths, workers=2, cache=cache)
    for entry in cache.sets.iterdir():
        entry.unlink()
    files_before = {entry.name: entry.stat().st_mtime_ns for entry in cache.files.iterdir()}
    state, _, _ = merge_files(paths[1:], workers=1, cache=cache)
    assert {entry.name for entry in cache.files.iterdir()} == set(files_before)  # nothing parsed and stored anew
    assert dump_json(summary_of(state)) == dump_json(summary_of(merge_files(paths[1:], workers=1)[0]))


def test_a_file_is_stored_once_a_stored_set_lists_it_unchanged(samples: Path, tmp_path: Path) -> None:
    """A first report stores its set alone; a report that no set fits (a file changed) parses the others again and
    stores them, since they have proved to be read again; the next such report reads them from their entries."""
    paths = sorted(samples.rglob("aoe_result_*.json"))
    live = paths[-1]

    def report() -> tuple[ReportCache, str]:
        cache = ReportCache(tmp_path / "lazy", limit_bytes=2**30)
        return cache, dump_json(summary_of(merge_files(paths, workers=1, cache=cache)[0]))

    cache, first = report()
    assert not cache.files.exists() and len(list(cache.sets.glob("*.members"))) == 1
    live.write_bytes(live.read_bytes() + b"\n")  # a live file grows: no stored set fits any more
    cache, second = report()
    stored = {entry.name for entry in cache.files.iterdir()}
    assert len(stored) == len([path for path in paths if path != live]) == len(cache.listed)
    assert cache._file_entry(str(live), os.stat(live)).name not in stored  # it changed: not proved to be read again
    assert second == first
    live.write_bytes(live.read_bytes() + b"\n")
    served: list[str] = []
    real = cache_module.ReportCache.get_file

    def counting(self: ReportCache, path: str, info: os.stat_result) -> object:
        hit = real(self, path, info)
        if hit is not None:
            served.append(path)
        return hit

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cache_module.ReportCache, "get_file", counting)
        cache, third = report()
    assert sorted(served) == sorted(str(path) for path in paths if path != live) and third == first


def test_the_cache_stays_within_its_bound(samples: Path, tmp_path: Path) -> None:
    limit = 40_000
    cache = ReportCache(tmp_path / "small", limit_bytes=limit, every_file=True)
    paths = sorted(samples.rglob("aoe_result_*.json"))
    for start in range(len(paths)):
        merge_files(paths[start:] + paths[:start], workers=1, cache=cache)
        stored = [entry for directory in (cache.files, cache.sets) for entry in directory.iterdir()]
        assert sum(entry.stat().st_size for entry in stored) <= limit
        assert len([entry for entry in cache.sets.iterdir() if entry.suffix == ".members"]) <= cache_module.MAX_SETS


def test_an_entry_left_half_written_by_a_killed_process_is_removed_once_it_is_old(samples: Path, cache: ReportCache) -> None:
    merge_files(sorted(samples.rglob("aoe_result_*.json")), workers=1, cache=cache)
    abandoned, in_progress = cache.files / ".write-abandoned", cache.files / ".write-in-progress"
    for partial in (abandoned, in_progress):
        partial.write_bytes(b"half an entry")
    long_ago = time.time() - cache_module.ABANDONED_AFTER_S - 60
    os.utime(abandoned, (long_ago, long_ago))

    merge_files(sorted(samples.rglob("aoe_result_*.json")), workers=1, cache=cache)  # served whole: writes nothing

    assert not abandoned.exists()
    assert in_progress.exists()  # perhaps another report's, still writing


def test_an_unreadable_or_foreign_entry_is_a_miss(samples: Path, cache: ReportCache) -> None:
    paths = sorted(samples.rglob("aoe_result_*.json"))
    expected = dump_json(summary_of(merge_files(paths, workers=1)[0]))
    merge_files(paths, workers=1, cache=cache)
    for directory in (cache.files, cache.sets):
        for entry in directory.iterdir():
            entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])  # cut off, as a crash could not leave it
    assert dump_json(summary_of(merge_files(paths, workers=1, cache=cache)[0])) == expected


_CONCURRENT = """
import sys
from pathlib import Path
from aoe_runner.common.jsontext import dump_json
from aoe_runner.report.api import merge_files
from aoe_runner.report.cache import ReportCache
from aoe_runner.report.summary_data import summary_of
cache = ReportCache(Path(sys.argv[1]), limit_bytes=int(sys.argv[2]))
paths = sorted(Path(sys.argv[3]).rglob("aoe_result_*.json"))
for round in range(6):
    chosen = paths[round % 3:] if round % 2 else paths
    state, _, errors = merge_files(chosen, workers=1, cache=cache)
    assert not errors, errors
    sys.stdout.write(dump_json(summary_of(state), indent=None) + "\\n")
"""


def test_two_processes_share_one_cache(samples: Path, tmp_path: Path) -> None:
    root = tmp_path / "shared"
    command = [sys.executable, "-c", _CONCURRENT, str(root), "60000", str(samples)]
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT) for _ in range(2)]
    outputs = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], [err.decode() for _, err in outputs]
    paths = sorted(samples.rglob("aoe_result_*.json"))
    expected = [
        dump_json(summary_of(merge_files(paths[round % 3 :] if round % 2 else paths, workers=1)[0]), indent=None)
        for round in range(6)
    ]
    for out, _ in outputs:
        assert out.decode().splitlines() == expected
    assert not [entry for entry in root.rglob(".write-*")]  # no half-written entry left behind


def test_the_report_command_fills_the_cache_in_the_aoe_runner_home(cli, _fenced_home: Path) -> None:  # type: ignore[no-untyped-def]
    first = cli("report", str(SAMPLES), "--format", "json")
    assert list((_fenced_home / "cache" / "report").glob("*/sets/*.members"))
    second = cli("report", str(SAMPLES), "--format", "json")
    assert first.out == second.out and first.err == second.err and first.code == second.code


def test_what_other_code_cached_is_never_served(tmp_path: Path) -> None:
    """An older aoe-runner (here: a copy whose merge doubles the before-time of every new bank entry) fills the cache
    of a home; this code, reporting in the same home, gives its own answer, not the copy's, and removes the copy's
    entries."""
    other = tmp_path / "other"
    shutil.copytree(ROOT / "aoe_runner", other / "aoe_runner", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    merge = other / "aoe_runner" / "report" / "entries.py"
    source = merge.read_text()
    assert source.count("self.before = before\n") == 1
    merge.write_text(source.replace("self.before = before\n", "self.before = before * 2\n"))
    env = {**os.environ, "AOE_RUNNER_HOME": str(tmp_path / "home")}
    env.pop("AOE_RUNNER_CACHE", None)

    def report(package_root: Path) -> str:
        command = [sys.executable, "-m", "aoe_runner", "report", str(SAMPLES), "--format", "json"]
        done = subprocess.run(command, capture_output=True, text=True, env={**env, "PYTHONPATH": str(package_root)}, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    theirs = report(other)
    ours_fresh = report(ROOT)  # the copy's entries are in the home: this must not read them
    ours_cached = report(ROOT)  # now from our own entries

    assert theirs != ours_fresh
    assert ours_fresh == ours_cached
    assert len(list((tmp_path / "home" / "cache" / "report").iterdir())) == 1  # the copy's directory is gone


def _stored(cache: ReportCache, paths: list[Path]) -> cache_module.StoredSet:
    stored = cache.get_set({str(path): os.stat(path) for path in paths})
    assert stored is not None
    return stored


@pytest.fixture
def any_delta(monkeypatch: pytest.MonkeyPatch) -> None:
    """Store a grown set as what it adds however large that is (the samples' files differ much in size)."""
    monkeypatch.setattr(cache_module, "DELTA_SHARE", 0)


@pytest.mark.usefixtures("any_delta")
def test_a_set_grown_file_by_file_is_stored_as_what_each_file_adds(samples: Path, tmp_path: Path) -> None:
    """Each report over the files of the last one plus one more writes what that file adds and the set it adds to,
    on at most MAX_CHAIN sets below it; read back, every set gives the answer of a report without the cache."""
    cache = ReportCache(tmp_path / "grown", limit_bytes=2**30)
    paths = sorted(samples.rglob("aoe_result_*.json"))
    assert len(paths) > cache_module.MAX_CHAIN + 1
    depths = []
    for end in range(1, len(paths) + 1):
        expected = dump_json(summary_of(merge_files(paths[:end], workers=1)[0]))
        assert dump_json(summary_of(merge_files(paths[:end], workers=1, cache=cache)[0])) == expected
        stored = _stored(cache, paths[:end])
        assert dump_json(summary_of(stored.state)) == expected  # read back through the chain
        assert stored.stamps and sorted(stamp.path for stamp in stored.stamps) == sorted(map(str, paths[:end]))
        depths.append(len(stored.chain))
        state_file = cache.sets / f"{stored.name}.state"
        if len(stored.chain) > 1:  # what one file adds is less than the whole set
            assert state_file.stat().st_size < len(stored.state.to_bytes())
    assert depths == [*range(1, cache_module.MAX_CHAIN + 2), *[1] * (len(paths) - cache_module.MAX_CHAIN - 1)]


@pytest.mark.usefixtures("any_delta")
def test_a_set_whose_base_is_gone_damaged_or_hostile_is_a_miss(samples: Path, tmp_path: Path) -> None:
    cache = ReportCache(tmp_path / "broken", limit_bytes=2**30)
    paths = sorted(samples.rglob("aoe_result_*.json"))
    for end in (1, 2, 3):
        merge_files(paths[:end], workers=1, cache=cache)
    statuses = {str(path): os.stat(path) for path in paths[:3]}
    top = _stored(cache, paths[:3])
    assert len(top.chain) == 3
    expected = dump_json(summary_of(merge_files(paths[:3], workers=1)[0]))
    state_file, members_file = cache.sets / f"{top.name}.state", cache.sets / f"{top.name}.members"
    written, members = state_file.read_bytes(), members_file.read_bytes()
    body = written.partition(b"\n")[2]
    below = cache.sets / f"{top.chain[1]}.state"
    damaged = [
        written[:-1] + bytes([written[-1] ^ 1]),  # a bit flipped
        written.replace(top.chain[1].encode(), top.chain[2].encode()),  # a level skipped, checksum kept
        below.read_bytes(),  # another set's state under this name
        cache_entries.joined_state(top.name, b"../../../../etc/passwd", body),  # outside, checksum right
        cache_entries.joined_state(top.name, top.name.encode(), body),  # adds to itself
        cache_entries.joined_state(top.name, b"0" * 31, body),
        b"-\n" + body,  # no checksum
    ]
    for content in damaged:
        state_file.write_bytes(content)
        assert cache.get_set(statuses) is None or cache.get_set(statuses).name != top.name  # type: ignore[union-attr]
        assert dump_json(summary_of(merge_files(paths[:3], workers=1, cache=cache)[0])) == expected  # and stored again
        assert dump_json(summary_of(_stored(cache, paths[:3]).state)) == expected
    state_file.write_bytes(written)
    assert _stored(cache, paths[:3]).chain == top.chain
    members_file.write_bytes((cache.sets / f"{top.chain[1]}.members").read_bytes())  # another set's members
    assert (cache.get_set(statuses) or top).name != top.name
    members_file.write_bytes(members)
    (cache.sets / f"{top.chain[-1]}.state").unlink()  # the whole set at the bottom
    assert cache.get_set(statuses) is None
    assert dump_json(summary_of(merge_files(paths[:3], workers=1, cache=cache)[0])) == expected


def test_a_set_is_stored_as_what_it_adds_only_when_that_is_small_beside_what_it_adds_to(tmp_path: Path) -> None:
    def document(index: int, operators: int) -> dict[str, object]:
        records = [{**_operator("Format"), "op_name": f"op{index}-{n}"} for n in range(operators)]
        report = f"report_2026030112000000{index}_{index}"
        return {report: [{"basic": {"tuning_name": "n"}}, {"OPAT": {"repo_modified_operators": records}}]}

    paths = []
    for index, operators in enumerate((400, 10, 300)):
        paths.append(tmp_path / f"aoe_result_opat_2026030112000000{index}_{index}.json")
        paths[-1].write_text(json.dumps(document(index, operators)))
    cache = ReportCache(tmp_path / "cache", limit_bytes=2**30)
    for end in (1, 2, 3):
        merge_files(paths[:end], workers=1, cache=cache)
        expected = dump_json(summary_of(merge_files(paths[:end], workers=1)[0]))
        assert dump_json(summary_of(_stored(cache, paths[:end]).state)) == expected
    assert len(_stored(cache, paths[:2]).chain) == 2  # 10 operators beside 400: what they add
    assert len(_stored(cache, paths[:3]).chain) == 1  # 300 beside 410: whole


@pytest.mark.usefixtures("any_delta")
def test_trimming_keeps_the_sets_that_kept_sets_add_to(samples: Path, tmp_path: Path) -> None:
    cache = ReportCache(tmp_path / "kept", limit_bytes=2**30)
    paths = sorted(samples.rglob("aoe_result_*.json"))
    for end in range(1, cache_module.MAX_CHAIN + 2):
        merge_files(paths[:end], workers=1, cache=cache)
    assert len(list(cache.sets.glob("*.members"))) == cache_module.MAX_CHAIN + 1 > cache_module.MAX_SETS
    top = _stored(cache, paths[: cache_module.MAX_CHAIN + 1])
    assert len(top.chain) == cache_module.MAX_CHAIN + 1  # its whole set, the oldest, outlived MAX_SETS
    unrelated = []
    for other in range(1, cache_module.MAX_SETS + 1):  # sets of one file each, not the first, used later
        merge_files(paths[other : other + 1], workers=1, cache=cache)
        unrelated.append(_stored(cache, paths[other : other + 1]).name)
        names = {path.stem for path in cache.sets.glob("*.members")}
        if other < cache_module.MAX_SETS:  # the chain's top is among the MAX_SETS last used: all of it is kept
            assert names == set(top.chain) | set(unrelated)
            assert {path.stem for path in cache.sets.glob("*.state")} == names
        else:  # pushed out, the whole chain goes
            assert names == set(unrelated)


def _report_file(directory: Path, name: str, report: str, basic: dict[str, object], opat: dict[str, object]) -> Path:
    path = directory / name
    path.write_text(json.dumps({report: [{"basic": basic}, {"OPAT": opat}]}))
    return path


def _operator(mode: str) -> dict[str, object]:
    figures = {"performance_before_tune(us)": 10.0, "performance_after_tune(us)": 5.0, "performance_improvement": "100.00%"}
    return {"op_name": "op/X", "op_type": "Conv2D", "tune_performance": {mode: {**figures, "update_mode": "add"}}}


def test_what_depends_on_the_order_files_are_merged_in_is_the_same_with_and_without_the_cache(tmp_path: Path) -> None:
    """The tuning time is summed exactly, so a stored set plus new files totals as all files at once (0.1 + 0.2 + 0.3
    in floats depends on the order); the same operator with a mode of null (CANN 6.0) and of "" ranks in one order."""
    timed = [
        _report_file(
            tmp_path,
            f"aoe_result_opat_2026030112000000{n}_{n}.json",
            f"report_2026030112000000{n}_{n}",
            {"tuning_name": "n", "tuning_time(s)": seconds},
            {"opat_tuning_result": "tuning successful", "repo_modified_operators": [_operator("Format")]},
        )
        for n, seconds in ((1, 0.1), (2, 0.2), (3, 0.3))
    ]
    cann60 = _report_file(
        tmp_path,
        "aoe_result_opat_20220815_093012345_1.json",
        "report_20220815_093012345_1",
        {"tuning_name": "n", "tuning_time(s)": 1},
        {"opat_tune_result": "tune success", "repo_modified_operators": {"add_repo_operators": [_without_mode()]}},
    )
    no_mode = _report_file(
        tmp_path,
        "aoe_result_opat_20260301120000000_9.json",
        "report_20260301120000000_9",
        {"tuning_name": "n", "tuning_time(s)": 1},
        {"opat_tuning_result": "tuning successful", "repo_modified_operators": [_operator("")]},
    )
    for first, everything in ((timed[:1], timed), (timed[2:], timed), ([no_mode], [cann60, no_mode])):
        cache = ReportCache(tmp_path / f"cache-{first[0].name}", limit_bytes=2**30)
        without = dump_json(summary_of(merge_files(everything, workers=1)[0]))
        assert dump_json(summary_of(merge_files(list(reversed(everything)), workers=1)[0])) == without
        merge_files(first, workers=1, cache=cache)
        assert dump_json(summary_of(merge_files(everything, workers=1, cache=cache)[0])) == without
    assert json.loads(dump_json(summary_of(merge_files(timed, workers=1)[0])))["totals"]["tuning_time_s"] == 0.6  # exact


def _without_mode() -> dict[str, object]:
    return {"op_name": "op/X", "op_type": "Conv2D", "performance_after_tune(us)": 5.0, "performance_before_tune(us)": 10.0}


def test_hostile_cache_files_are_misses_not_errors_or_hangs(samples: Path, tmp_path: Path) -> None:
    paths = sorted(samples.rglob("aoe_result_*.json"))
    expected = dump_json(summary_of(merge_files(paths, workers=1)[0]))
    cache = ReportCache(tmp_path / "hostile", limit_bytes=2**30)
    merge_files(paths, workers=1, cache=cache)
    members_file = next(cache.sets.glob("*.members"))
    state_file = members_file.with_suffix(".state")
    nested = b"\x91" * 5000 + b"\xc0"  # msgpack arrays 5000 deep
    for members in (nested, cache_entries.ENCODER.encode([cache_module._ENTRY_VERSION, [[["a list"], [1, 2, 3, 4, 5], None]]])):
        members_file.write_bytes(members)
        assert dump_json(summary_of(merge_files(paths, workers=1, cache=cache)[0])) == expected
    name = next(cache.sets.glob("*.members")).stem
    state_file = cache.sets / f"{name}.state"
    state_file.write_bytes(cache_entries.joined_state(name, b"-", nested))
    assert cache.get_set({str(path): os.stat(path) for path in paths}) is None
    state_file.unlink()
    os.mkfifo(state_file)  # a reader of a FIFO waits for a writer: never opened for reading
    assert cache.get_set({str(path): os.stat(path) for path in paths}) is None
    assert dump_json(summary_of(merge_files(paths, workers=1, cache=cache)[0])) == expected


def test_a_cache_directory_others_can_write_to_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOE_RUNNER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AOE_RUNNER_CACHE", raising=False)
    assert ReportCache.from_environment() is not None
    base = tmp_path / "home" / "cache" / "report"
    assert base.stat().st_mode & 0o777 == 0o700
    base.chmod(0o777)
    assert ReportCache.from_environment() is None


def test_an_entry_made_in_another_time_zone_is_not_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report without a timestamp takes its file's mtime, in local time: what one zone cached, another recomputes."""
    path = tmp_path / "aoe_result_opat_nodate.json"
    path.write_text(json.dumps(_document(40.25)).replace("report_20260310120000000_1", "report_1"))
    os.utime(path, (1_735_732_800, 1_735_732_800))  # 2025-01-01 12:00 UTC
    cache = ReportCache(tmp_path / "zones", limit_bytes=2**30, every_file=True)
    answers = {}
    try:
        for zone in ("UTC", "Asia/Shanghai", "UTC"):
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            fresh = dump_json(summary_of(merge_files([path], workers=1)[0]))
            assert dump_json(summary_of(merge_files([path], workers=1, cache=cache)[0])) == fresh
            answers[zone] = fresh
    finally:
        monkeypatch.undo()
        time.tzset()
    assert answers["UTC"] != answers["Asia/Shanghai"]


@pytest.mark.usefixtures("any_delta")
def test_under_a_tight_bound_the_set_just_used_is_kept_whole(samples: Path, tmp_path: Path) -> None:
    """A chain that would take more than half the bound is stored whole instead, and trimming takes a chain's top
    before what it adds to, so the set a report just stored still serves a report over the same files."""
    paths = sorted(samples.rglob("aoe_result_*.json"))
    whole = len(merge_files(paths, workers=1)[0].to_bytes())
    cache = ReportCache(tmp_path / "tight", limit_bytes=int(whole * 2.5))
    for end in range(1, len(paths) + 1):
        merge_files(paths[:end], workers=1, cache=cache)
        stored_bytes = sum(path.stat().st_size for path in cache.sets.iterdir())
        assert stored_bytes <= cache.limit_bytes
        assert _stored(cache, paths[:end]).stamps  # served whole or through a chain that fits


def test_an_entry_made_under_other_rules_of_the_same_zone_is_not_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same TZ and the same offsets today, but another past: the zone file TZ names is replaced (as switching
    /etc/localtime or a tzdata update does). Buenos Aires and Sao Paulo are both -03 without DST now; in January
    2018 Sao Paulo kept summer time, so a file's mtime then is another local time."""
    zoneinfo = Path("/usr/share/zoneinfo/America")
    path = tmp_path / "aoe_result_opat_nodate.json"
    path.write_text(json.dumps(_document(40.25)).replace("report_20260310120000000_1", "report_1"))
    os.utime(path, (1_516_000_000, 1_516_000_000))  # 2018-01-15 07:06:40 UTC
    zone = tmp_path / "localtime"
    answers = []
    try:
        for rules in ("Argentina/Buenos_Aires", "Sao_Paulo"):
            shutil.copyfile(zoneinfo / rules, zone)
            monkeypatch.setenv("TZ", "UTC")  # the C library reads the zone file again only for another TZ
            time.tzset()
            monkeypatch.setenv("TZ", f":{zone}")
            time.tzset()
            cache = ReportCache(tmp_path / "zones", limit_bytes=2**30, every_file=True)
            fresh = dump_json(summary_of(merge_files([path], workers=1)[0]))
            assert dump_json(summary_of(merge_files([path], workers=1, cache=cache)[0])) == fresh
            answers.append(fresh)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert answers[0] != answers[1]


@pytest.mark.parametrize(
    "columns",
    [
        [["op"], [], [], [], [], [], [], []],  # of different lengths
        [["op"], ["Conv2D"], ["Schedule"], ["slow"], [1.0], [True], ["1%"], [0]],  # a time that is not a number
        [["op"], ["Conv2D"], ["Schedule"], [2.0], [1.0], [True], ["1%"], [[[[0]]]]],  # nested where a number belongs
    ],
    ids=["uneven", "type-confused", "nested"],
)
def test_a_damaged_file_entry_is_a_miss(samples: Path, tmp_path: Path, columns: list[list[object]]) -> None:
    path = next(samples.rglob("aoe_result_*.json"))
    expected = dump_json(summary_of(merge_files([path], workers=1)[0]))
    cache = ReportCache(tmp_path / "damaged", limit_bytes=2**30, every_file=True)
    info, data = os.stat(path), path.read_bytes()
    head = [1, str(path), "training", False, [], []]
    body = cache_entries.ENCODER.encode([head, columns, [[]] * 8])
    stamp, moment = stamps.Stamp.of_read(str(path), info, data), cache_module._local_mtime(info.st_mtime_ns)
    entry = [cache_module._ENTRY_VERSION, stamp.to_wire(), moment, body]
    assert cache_entries.write_entry(cache._file_entry(str(path), info), lambda: cache_entries.checked(entry))
    assert cache.get_file(str(path), info) is None
    assert dump_json(summary_of(merge_files([path], workers=1, cache=cache)[0])) == expected


def test_a_deeply_nested_file_entry_is_a_miss(samples: Path, tmp_path: Path) -> None:
    path = next(samples.rglob("aoe_result_*.json"))
    cache = ReportCache(tmp_path / "deep", limit_bytes=2**30, every_file=True)
    info, data = os.stat(path), path.read_bytes()
    head = cache_entries.ENCODER.encode([1, str(path), "training", False, [], []])
    body = b"\x93" + head + b"\x91" * 200_000 + b"\xc0" + b"\x90"  # [head, [[[...]]], []]
    stamp, moment = stamps.Stamp.of_read(str(path), info, data), cache_module._local_mtime(info.st_mtime_ns)
    entry = [cache_module._ENTRY_VERSION, stamp.to_wire(), moment, body]
    assert cache_entries.write_entry(cache._file_entry(str(path), info), lambda: cache_entries.checked(entry))
    assert cache.get_file(str(path), info) is None


def _returns_within(seconds: float, call: Any) -> Any:
    """call() in a daemon thread: its result, or a failure when it is still blocked after `seconds`."""
    answer: list[Any] = []
    worker = threading.Thread(target=lambda: answer.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "blocked"
    return answer[0]


def test_a_fifo_put_where_a_hashed_file_was_is_never_opened(tmp_path: Path) -> None:
    """A small file keeps a content hash, checked by reading the file again: a FIFO put in its place since its
    status was taken (a symlinked directory flipped, say) is a change, not a reader blocked for ever."""
    path = tmp_path / "aoe_result_opat_20260310120000000_1.json"
    path.write_text(json.dumps(_document(40.25)))
    info = os.stat(path)
    stamp = stamps.Stamp.of_read(str(path), info, path.read_bytes())
    assert stamp.digest is not None and stamp.holds(str(path), info)
    path.unlink()
    os.mkfifo(path)
    assert _returns_within(10, lambda: stamp.holds(str(path), info)) is False


@pytest.mark.usefixtures("any_delta")
def test_a_fifo_named_like_a_state_never_hangs_the_trim(samples: Path, tmp_path: Path) -> None:
    paths = sorted(samples.rglob("aoe_result_*.json"))
    cache = ReportCache(tmp_path / "fifo", limit_bytes=2**30)
    merge_files(paths[:-1], workers=1, cache=cache)
    merge_files(paths, workers=1, cache=cache)
    top = _stored(cache, paths)
    assert len(top.chain) == 2
    state = cache.sets / f"{top.chain[0]}.state"
    state.unlink()
    os.mkfifo(state)
    _returns_within(10, cache.trim)
    assert _returns_within(10, lambda: cache._below(top.chain[0])) == []


@pytest.mark.parametrize(("value", "megabytes"), [("inf", None), ("1e400", None), ("1e303", None), ("64", 64), (" 0.5 ", 0.5)])
def test_a_cache_size_is_megabytes_at_most_an_exbibyte(
    value: str, megabytes: float | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AOE_RUNNER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AOE_RUNNER_CACHE", raising=False)
    monkeypatch.setenv("AOE_RUNNER_CACHE_MB", value)
    cache = ReportCache.from_environment()
    assert cache is not None
    assert cache.limit_bytes == int((megabytes or cache_module.MAX_LIMIT_MB) * 2**20)  # 1e400 reads as inf


@pytest.mark.parametrize(
    ("variable", "value"),
    [("AOE_RUNNER_CACHE", "of"), ("AOE_RUNNER_CACHE", "disable"), ("AOE_RUNNER_CACHE_MB", "64MB")]
    + [("AOE_RUNNER_CACHE_MB", value) for value in ("abc", "nan", "-inf", "-1", "６４")],
)
def test_a_cache_setting_that_is_a_typo_is_a_usage_error_not_the_default(
    variable: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AOE_RUNNER_CACHE=of left the cache on (off is the way around its documented gap), and AOE_RUNNER_CACHE_MB=64MB
    was 512 MB, each without a word."""
    monkeypatch.setenv("AOE_RUNNER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(variable, value)
    with pytest.raises(UsageError, match=f"{variable}="):
        ReportCache.from_environment()


def test_any_damaged_byte_in_a_file_entry_is_a_miss(samples: Path, tmp_path: Path) -> None:
    """A file's entry carries a checksum of itself: a changed byte that still decodes (a figure, a path) is never
    served, whichever byte it is."""
    path = max(samples.rglob("aoe_result_*.json"), key=lambda found: found.stat().st_size)
    cache = ReportCache(tmp_path / "flipped", limit_bytes=2**30, every_file=True)
    merge_files([path], workers=1, cache=cache)
    info = os.stat(path)
    (entry,) = cache.files.iterdir()
    data = entry.read_bytes()
    assert cache.get_file(str(path), info) is not None
    for position in range(len(data)):
        for flip in (0x01, 0x80):
            damaged = bytearray(data)
            damaged[position] ^= flip
            entry.write_bytes(damaged)
            assert cache.get_file(str(path), info) is None, (position, flip)


def test_a_cached_name_that_is_not_utf8_is_a_miss_not_a_crash(samples: Path, tmp_path: Path) -> None:
    """msgspec raises UnicodeDecodeError, not its DecodeError, for such a string: a set's members (whose name checks
    them, but only after they decode) and a file's entry with a right checksum."""
    paths = sorted(samples.rglob("aoe_result_*.json"))
    expected = dump_json(summary_of(merge_files(paths, workers=1)[0]))
    cache = ReportCache(tmp_path / "utf8", limit_bytes=2**30, every_file=True)
    merge_files(paths, workers=1, cache=cache)
    (members,) = cache.sets.glob("*.members")
    data = members.read_bytes()
    at = data.index(str(paths[0]).encode())
    members.write_bytes(data[:at] + b"\xff" + data[at + 1 :])
    assert dump_json(summary_of(merge_files(paths, workers=1, cache=cache)[0])) == expected

    path = paths[0]
    info = os.stat(path)
    entry = cache_entries.DECODER.decode(cache._file_entry(str(path), info).read_bytes().partition(b"\n")[2])
    entry[1][0] = "\x01\x02\x03" + entry[1][0]  # the stamp's path, then made not UTF-8
    body = cache_entries.ENCODER.encode(entry).replace(b"\x01\x02\x03", b"\xff\xff\xff")
    cache._file_entry(str(path), info).write_bytes(b"%08x\n" % zlib.crc32(body) + body)
    assert cache.get_file(str(path), info) is None
