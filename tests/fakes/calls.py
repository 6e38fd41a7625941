"""Where the fake frameworks and the fake `aoe` CLI note what they were asked (FAKE_CALLS: a JSON-lines file)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


def note(who: str, call: str, **details: object) -> None:
    where = os.environ.get("FAKE_CALLS")
    if where:
        with open(where, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"who": who, "call": call, "pid": os.getpid(), **details}) + "\n")


def read(where: Path) -> list[dict]:
    return [json.loads(line) for line in where.read_text(encoding="utf-8").splitlines()] if where.exists() else []


def training_result(operators: list[str], work: Path) -> Path:
    """An OPAT result file as a training scenario writes it (AOE.md §4), in ASCEND_WORK_PATH (else `work`)."""
    stamp = time.strftime("%Y%m%d%H%M%S") + "000"
    records = [
        {
            "op_name": name,
            "op_type": "MatMulV2",
            "tune_performance": {
                "Schedule": {
                    "performance_after_tune(us)": 10.0,
                    "performance_before_tune(us)": 20.0,
                    "performance_improvement": "100.00%",
                    "update_mode": "add",
                }
            },
        }
        for name in operators
    ]
    report = [
        {"basic": {"tuning_name": "fake_graph", "tuning_time(s)": 1}},
        {"OPAT": {"opat_tuning_result": "tuning successful", "repo_modified_operators": records}},
    ]
    directory = Path(os.environ.get("ASCEND_WORK_PATH") or work)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"aoe_result_opat_{stamp}_{os.getpid()}.json"
    path.write_text(json.dumps({f"report_{stamp}_{os.getpid()}": report}), encoding="utf-8")
    return path
