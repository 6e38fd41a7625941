"""Where outputs go: `-o -` is stdout, a bad -o names the real cause, files follow the umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from tests.tune.runner import SIMULATOR, Home


def run_cli(*argv: str, cwd: Path, umask: int = 0o022, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aoe_runner", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.umask(umask),
    )


def test_dash_means_stdout_and_creates_no_file(tmp_path: Path) -> None:
    result = run_cli("report", str(SAMPLES / "training_opat"), "-f", "json", "-o", "-", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("{")
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize(
    ("target", "cause"),
    [
        ("", "an empty path names no file"),
        ("/proc/version", "files of /proc and /sys are the kernel's"),
        (".", "it is a directory"),
        ("/nonexistent-dir/out.json", "a new file in /nonexistent-dir could not be made"),
    ],
)
def test_a_bad_output_path_is_one_line_naming_the_real_cause(tmp_path: Path, target: str, cause: str) -> None:
    result = run_cli("report", str(SAMPLES / "training_opat"), "-f", "json", "-o", target, cwd=tmp_path)

    assert result.returncode == 4, result.stderr
    assert cause in result.stderr and result.stderr.count("error:") == 1


def test_a_path_ending_in_a_slash_is_refused_and_a_file_of_that_name_kept(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("precious\n")

    for target in ("notes.txt/", "newdir/"):
        result = run_cli("report", str(SAMPLES / "training_opat"), "-f", "json", "-o", target, cwd=tmp_path)
        assert result.returncode == 4 and "a path that ends in / names a directory" in result.stderr, result.stderr

    assert notes.read_text() == "precious\n" and not (tmp_path / "newdir").exists()


def test_a_symbolic_link_stays_and_its_target_gets_the_output(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "summary.json"
    target.write_text("old\n")
    (tmp_path / "link.json").symlink_to(target)

    result = run_cli("report", str(SAMPLES / "training_opat"), "-f", "json", "-o", "link.json", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "link.json").is_symlink() and target.read_text().startswith("{")


def test_a_path_to_stdout_writes_stdout_where_it_is_redirected(tmp_path: Path) -> None:
    """`-o /dev/stdout > page`: the page goes where stdout goes; /dev/stdout (a link to /proc/self/fd/1) is never
    replaced (as root it could be). A link of the test's own stands for it."""
    (tmp_path / "stdout").symlink_to("/proc/self/fd/1")
    redirected = tmp_path / "redirected.json"
    with redirected.open("wb") as out:
        result = subprocess.run(
            [sys.executable, "-m", "aoe_runner", "report", str(SAMPLES / "training_opat"), "-f", "json", "-o", "stdout"],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "stdout").is_symlink() and redirected.read_text().startswith("{")


def test_a_replaced_output_keeps_its_permissions_and_owner(tmp_path: Path) -> None:
    out = tmp_path / "private.json"
    out.write_text("old\n")
    out.chmod(0o640)
    owned = os.geteuid() == 0
    if owned:  # root may keep another user's ownership: the file stays theirs
        os.chown(out, 65534, 65534)

    result = run_cli("report", str(SAMPLES / "training_opat"), "-f", "json", "-o", str(out), cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    info = out.stat()
    assert stat.S_IMODE(info.st_mode) == 0o640 and out.read_text().startswith("{")
    if owned:
        assert (info.st_uid, info.st_gid) == (65534, 65534)


def test_a_fifo_as_output_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    result = run_cli("report", str(SAMPLES / "training_opat"), "-o", str(fifo), cwd=tmp_path)

    assert result.returncode == 4 and "not a regular file" in result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # left as it was


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_outputs_and_run_records_follow_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    home = Home(tmp_path)
    out = tmp_path / "summary.json"
    assert (
        run_cli("report", str(SAMPLES / "training_opat"), "-f", "json", "-o", str(out), cwd=tmp_path, umask=umask).returncode == 0
    )
    tuned = run_cli("tune", str(SIMULATOR), "--mode", "op", "--force", "--", "exit", "0", cwd=tmp_path, umask=umask, env=home.env)
    assert tuned.returncode == 0, tuned.stderr

    assert stat.S_IMODE(out.stat().st_mode) == mode
    (manifest,) = (tmp_path / "home" / "runs").glob("*/manifest.json")
    assert stat.S_IMODE(manifest.stat().st_mode) == mode


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_while_an_output_is_written_leaves_neither_half_a_file_nor_a_temporary(
    tmp_path: Path, name: str
) -> None:
    """Killed by default, the process left `.page.html.*.tmp` beside the page: now the signal interrupts like Ctrl-C
    and the write cleans up. The signal is sent from inside the write, after its first piece, so the window is hit."""
    script = f"""
import os, signal, sys
from aoe_runner.common.files import atomic_write_text

class Pieces(list):
    def __iter__(self):
        yield b"first piece"
        os.kill(os.getpid(), signal.{name})
        yield b"second piece"

try:
    atomic_write_text(sys.argv[1], Pieces())
except KeyboardInterrupt as interrupt:
    print("interrupted by", interrupt.args[0])
    sys.exit(130)
"""
    out = tmp_path / "page.html"
    out.write_text("the old page\n")

    done = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True, text=True, timeout=60)

    assert done.returncode == 130 and done.stdout == f"interrupted by {name}\n", done.stderr
    assert out.read_text() == "the old page\n" and sorted(path.name for path in tmp_path.iterdir()) == ["page.html"]


def test_the_default_handling_of_sigterm_and_sighup_is_back_after_a_write(tmp_path: Path) -> None:
    script = """
import signal, sys
from aoe_runner.common.files import atomic_write_text
atomic_write_text(sys.argv[1], "x")
print(all(signal.getsignal(number) is signal.SIG_DFL for number in (signal.SIGTERM, signal.SIGHUP)))
"""
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "out")], capture_output=True, text=True, timeout=60)

    assert done.stdout == "True\n", done.stderr
