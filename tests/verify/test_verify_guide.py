"""The verify guide's markdown example is real output: `python -m tests.verify.test_verify_guide` prints it afresh.

The command runs on the simulator in a scratch directory; paths, ids, the host and the Python version are replaced by
the values docs/guide/verify.md shows. Step times are noisy by design, so numbers and hashes are compared masked.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conftest import ROOT
from tests.tune.runner import SIMULATOR

COMMAND = "aoe-runner verify train.py --bank bank --format markdown --min-speedup 15% --max-tail-regression 2% -- steps 40 --bank-factor 0.9"
PROJECT = "/home/me/bert"
HOME = "/home/me/.local/share/aoe-runner"
PAGE = ROOT / "docs" / "guide" / "verify.md"
MARKER = "On the simulator, a bank that makes steps 10% faster against a rule that asks for 15%:"


def fresh_example() -> str:
    """`$ COMMAND`, then the PR-comment block of what it printed (everything before its details), normalised."""
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        shutil.copy(SIMULATOR, root / "train.py")
        (root / "bank" / "Ascend910B3" / "cube").mkdir(parents=True)
        (root / "bank" / "Ascend910B3" / "cube" / "MatMul.bin").write_bytes(b"tuned")
        env = {"AOE_RUNNER_HOME": str(root / "home"), "AOE_RUNNER_LOCK_DIR": str(root / "locks"), "PATH": "/usr/bin:/bin"}
        done = subprocess.run(
            [sys.executable, "-m", "aoe_runner", *COMMAND.split()[1:]],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1, done.stderr
        block = done.stdout.split("### Details", 1)[0]
        return f"$ {COMMAND}\n" + _normalise(block, root)


def _normalise(text: str, root: Path) -> str:
    text = text.replace(str(root / "home"), HOME).replace(str(root), PROJECT)
    text = re.sub(r"\d{8}-\d{6}-[0-9a-f]{8}", "20261121-093009-44ab9e01", text)
    text = re.sub(r"host(: |       )\S+, ", r"host\1npu-host-01, ", text)
    return re.sub(r"Python \d+\.\d+\.\d+", "Python 3.11.7", text)


def _masked(block: str) -> str:
    block = re.sub(r"\b[0-9a-f]{64}\b", "HASH", block)
    block = re.sub(r"[+-]?\d+\.\d+", "N", block)
    return re.sub(r" +", " ", re.sub(r"-{3,}", "---", block))


def test_the_verify_guide_shows_the_real_verify_markdown() -> None:
    page = PAGE.read_text(encoding="utf-8")
    shown = page.split(MARKER, 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert _masked(shown).strip() == _masked(fresh_example()).strip()


if __name__ == "__main__":
    print(fresh_example(), end="")
