"""A home that tunes banks with a script writing chosen files, and publishes and pulls them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tune.runner import Home, aoe_runner

WRITER = Path(__file__).with_name("bank_writer.py")


class Releases(Home):
    def tune_files(self, *files: str, bank: str = "bank") -> str:
        """Tune the writer into bank (under the test's directory); the run's id."""
        (self.root / bank).mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "aoe_runner",
            "-q",
            "tune",
            str(WRITER),
            "--mode",
            "op",
            "--force",
            "--framework",
            "tf",
            "--bank",
            bank,
        ]
        done = subprocess.run([*command, "--", *files], env=self.env, cwd=self.root, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return self.manifests()[-1]["id"]

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return aoe_runner(self, *argv, env={"HOME": str(self.root / "user")})

    def versions(self) -> list[dict]:
        done = self.run("bank", "versions", "--json")
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture
def releases(tmp_path: Path) -> Releases:
    return Releases(tmp_path)


def tree(path: Path) -> dict[str, bytes | str]:
    """Every file's bytes and every link's target under path (followed once, at path itself)."""
    found: dict[str, bytes | str] = {}
    for entry in sorted(path.resolve().rglob("*")):
        relative = str(entry.relative_to(path.resolve()))
        if entry.is_symlink():
            found[relative] = str(entry.readlink())
        elif entry.is_file():
            found[relative] = entry.read_bytes()
    return found
