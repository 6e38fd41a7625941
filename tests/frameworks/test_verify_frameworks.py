"""`verify` of a PyTorch script: both arms run through the launcher, which sets jit_compile=True (AOE.md §3: without
it the bank is not used), so the arms differ by the bank alone."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.calls import read
from tests.frameworks.test_tune_flows import env_for
from tests.tune.runner import SIMULATOR, Home, aoe_runner


def test_a_pytorch_script_is_verified_with_jit_compile_in_both_arms(tmp_path: Path) -> None:
    home = Home(tmp_path)
    (tmp_path / "bank" / "Ascend910B3" / "cube").mkdir(parents=True)
    (tmp_path / "bank" / "Ascend910B3" / "cube" / "MatMul.bin").write_bytes(b"tuned")
    script = tmp_path / "train.py"
    script.write_text(
        f"import runpy, sys\nimport torch_npu\nsys.argv[0] = {str(SIMULATOR)!r}\nrunpy.run_path(sys.argv[0], run_name='__main__')\n",
        encoding="utf-8",
    )
    done = aoe_runner(
        home, "verify", str(script), "--bank", "bank", "-f", "json", "--repeats", "2", "--", "steps", "40", "--bank-factor", "0.8",
        env=env_for(home),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["comparison"]["changes"][0]["statistic"] == "median"
    compile_calls = [c["value"] for c in read(tmp_path / "calls.jsonl") if c["call"] == "set_compile_mode"]
    assert compile_calls == [True, True, True, True]  # 2 repeats x 2 arms
    manifests = home.manifests()
    assert {m["verify"]["arm"] for m in manifests} == {"baseline", "tuned"}
    assert all(m["switch"]["calls"] == ["torch_npu.npu.set_compile_mode(jit_compile=True)"] for m in manifests)


def test_a_script_without_a_known_framework_is_verified_as_it_is(tmp_path: Path) -> None:
    home = Home(tmp_path)
    (tmp_path / "bank").mkdir()
    (tmp_path / "bank" / "op.bin").write_bytes(b"tuned")
    script = tmp_path / "train.py"
    script.write_text(f"import runpy, sys\nsys.argv[0] = {str(SIMULATOR)!r}\nrunpy.run_path(sys.argv[0], run_name='__main__')\n")
    done = aoe_runner(home, "verify", str(script), "--bank", "bank", "--repeats", "1", "--", "steps", "30", env=env_for(home))
    assert done.returncode in (0, 1), done.stderr
    assert all(m["command"][1] == str(script) and m["switch"] is None for m in home.manifests())
