"""Inputs for the page tests: result files with chosen operators, and names that try to become markup."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tune.runner import SIMULATOR, Home, aoe_runner

HOSTILE_NAMES = [
    "<script>alert(1)</script>",
    "</table><b>bold</b></script><!--",
    "<img src=x onerror=alert(2)>&amp;",
    "line\u2028separator\u2029para",
    "lone\ud800surrogate",
]

Op = tuple[str, str, float, float]  # name, op type, before µs, after µs


def write_ops(directory: Path, ops: list[Op], stamp: str = "20260310142233517", tuning_name: str = "model") -> Path:
    """One result file with one report holding these operators (update mode add), in AOE's format."""
    changed = [
        {"op_name": name, "op_type": op_type, "tune_performance": {"Format": {
            "performance_after_tune(us)": after, "performance_before_tune(us)": before,
            "performance_improvement": f"{(before / after - 1) * 100:.2f}%", "update_mode": "add"}}}
        for name, op_type, before, after in ops
    ]  # fmt: skip
    summary = {"repo_add_num": len(ops), "repo_hit_num": 0, "repo_reserved_num": 0, "repo_unsatisfied_num": 0,
               "repo_update_num": 0, "total_num": len(ops)}  # fmt: skip
    report = [
        {"basic": {"tuning_name": tuning_name, "tuning_time(s)": 30}},
        {"OPAT": {"opat_tuning_result": "tuning successful", "repo_summary": summary, "repo_modified_operators": changed}},
    ]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"aoe_result_opat_{stamp}_41237.json"
    path.write_text(json.dumps({f"report_{stamp}_41240": report}), encoding="utf-8")  # ensure_ascii: "\ud800" stays an escape
    return path


def diff_sides(root: Path) -> tuple[Path, Path]:
    """OLD and NEW results: 2 regressed, 3 improved, 4 unchanged, 1 added, 1 not in new."""
    old = [(f"layer_{i}/MatMul", "MatMulV2", 100.0 + i, 50.0 + i) for i in range(9)] + [("gone/Relu", "Relu", 10.0, 9.0)]
    new = [(name, op_type, before, after * (1.5 if i < 2 else 0.7 if i < 5 else 1.0))
           for i, (name, op_type, before, after) in enumerate(old[:9])] + [("fresh/Add", "Add", 30.0, 12.0)]  # fmt: skip
    return write_ops(root / "old", old).parent, write_ops(root / "new", new).parent


def verify_page(root: Path, page: Path, script: Path = SIMULATOR) -> None:
    """`verify --format html` of the simulator (or a copy) with a bank that makes it 20% faster, 3 runs per arm."""
    (root / "bank" / "x").mkdir(parents=True)
    (root / "bank" / "x" / "MatMul.bin").write_bytes(b"tuned")
    command = ("verify", str(script), "--bank", "bank", "--format", "html", "-o", str(page))
    result = aoe_runner(Home(root), *command, "--", "steps", "40", "--bank-factor", "0.8")
    assert result.returncode == 0, result.stderr


def history_page(root: Path, page: Path) -> Home:
    """Two succeeded tuning runs of the simulator and a failed one, then `runs report --script train.py`."""
    home = Home(root)
    (root / "bank").mkdir()
    tune = ("tune", str(SIMULATOR), "--mode", "op", "--force", "--bank", "bank", "--grace", "0.5s", "--")
    for _ in range(2):
        assert aoe_runner(home, *tune, "progress", "--reports", "2", "--interval", "0.05").returncode == 0
    assert aoe_runner(home, *tune, "exit", "3").returncode == 3
    assert aoe_runner(home, "runs", "report", "--script", "train.py", "-o", str(page)).returncode == 0
    return home
