"""A fake torch_npu: `npu.set_aoe` and `npu.set_compile_mode` are noted; `run_model` dumps a graph after set_aoe
(unless FAKE_TORCH_NO_DUMP=1: a script whose model never reaches the NPU)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.append(str(Path(__file__).resolve().parents[4]))
from tests.fakes.calls import note  # noqa: E402

__version__ = "2.1.0.post8"
_state: dict[str, object] = {"dump": None, "jit_compile": None}


def _set_aoe(dump_path: str) -> None:
    note("torch_npu", "set_aoe", value=dump_path)
    os.makedirs(dump_path, exist_ok=True)  # as torch_npu does
    _state["dump"] = dump_path


def _set_compile_mode(jit_compile: bool = False) -> None:
    note("torch_npu", "set_compile_mode", value=jit_compile)
    _state["jit_compile"] = jit_compile


npu = SimpleNamespace(set_aoe=_set_aoe, set_compile_mode=_set_compile_mode)


def run_model(name: str) -> None:
    print(f"training {name}", flush=True)
    dump = _state["dump"]
    if dump and os.environ.get("FAKE_TORCH_NO_DUMP") != "1":
        Path(str(dump), f"ge_onnx_{name}.pbtxt").write_text(f"graph {name}\n", encoding="utf-8")
