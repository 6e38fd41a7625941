"""`tune` switching AOE on in each framework, as real processes: fake MindSpore and torch_npu packages on the
script's path and a fake offline `aoe` CLI (tests/fakes, tests/simulator/aoe) note what they are asked, so each
test proves the documented switch was called or the CLI ran with the documented flags."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.fakes.calls import read
from tests.tune.runner import Home, aoe_runner, wait_for_output

FAKE_SITE = ROOT / "tests" / "fakes" / "site"
FAKE_AOE = ROOT / "tests" / "simulator" / "aoe"

PYTORCH_SCRIPT = """import sys
import torch_npu

print("argv", sys.argv[1:], flush=True)
torch_npu.run_model("resnet")
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""
MINDSPORE_SCRIPT = """import mindspore as ms

ms.run_model("lenet")
"""


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


def env_for(home: Home, **extra: str) -> dict[str, str]:
    """The fakes on the path (after the checkout, which Home puts there), their calls noted in the home."""
    return {"PYTHONPATH": f"{ROOT}{os.pathsep}{FAKE_SITE}", "FAKE_CALLS": str(home.root / "calls.jsonl"), **extra}


def write(home: Home, name: str, text: str) -> Path:
    path = home.root / name
    path.write_text(text, encoding="utf-8")
    return path


def calls(home: Home) -> list[dict]:
    return read(home.root / "calls.jsonl")


def tune(home: Home, *argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return aoe_runner(home, "tune", "--force", "--grace", "0.5s", *argv, env=env_for(home, **extra))


def test_mindspore_from_2_5_is_switched_on_through_op_tuning(home: Home) -> None:
    write(home, "train.py", MINDSPORE_SCRIPT)
    done = tune(home, "train.py", "--mode", "subgraph")
    assert done.returncode == 0, done.stderr
    assert "framework: mindspore (the script imports mindspore, train.py line 1" in done.stderr
    assert [(c["call"], c["value"]) for c in calls(home)] == [("aoe_tune_mode", "online"), ("aoe_job_type", "1")]
    manifest = home.only_manifest()
    assert manifest["framework"] == "mindspore"
    assert manifest["switch"]["version"] == "2.5.0"
    assert manifest["switch"]["calls"][0] == "mindspore.device_context.ascend.op_tuning.aoe_tune_mode('online')"
    assert len(manifest["result_files"]) == 1  # what MindSpore writes once tuning is on, recorded as any run's


def test_mindspore_before_2_5_is_switched_on_through_set_context(home: Home) -> None:
    write(home, "train.py", MINDSPORE_SCRIPT)
    done = tune(home, "train.py", "--mode", "op", FAKE_MINDSPORE_VERSION="2.4.10")
    assert done.returncode == 0, done.stderr
    (call,) = calls(home)
    assert call["call"] == "set_context"
    assert call["options"] == {"aoe_tune_mode": "online", "aoe_config": {"job_type": "2"}}
    assert home.only_manifest()["switch"]["calls"] == [
        "mindspore.set_context(aoe_tune_mode='online', aoe_config={'job_type': '2'})"
    ]


def test_mindspore_cannot_take_an_operator_list(home: Home) -> None:
    write(home, "train.py", MINDSPORE_SCRIPT)
    write(home, "ops.json", '{"tune_ops_name": ["a"]}')
    done = tune(home, "train.py", "--mode", "op", "--tune-ops", "ops.json")
    assert done.returncode == 2
    assert "MindSpore's AOE switch takes only a job type" in done.stderr
    assert home.manifests() == []


def test_pytorch_dumps_then_the_offline_cli_tunes_the_dump(home: Home) -> None:
    write(home, "train.py", PYTORCH_SCRIPT)
    write(home, "ops.json", '{"tune_ops_name": ["resnet/Conv2D_1"], "tune_ops_type": []}')
    done = tune(home, "train.py", "--mode", "op", "--aoe", str(FAKE_AOE), "--tune-ops", "ops.json", "--", "0", "x y")
    assert done.returncode == 0, done.stderr
    assert "argv ['0', 'x y']" in done.stdout  # the script's own arguments, through the launcher
    manifest = home.only_manifest()
    dump = home.root / "home" / "runs" / manifest["id"] / "dump"  # in the record: fresh for every run
    set_aoe, cli = calls(home)
    assert (set_aoe["call"], set_aoe["value"]) == ("set_aoe", str(dump))
    assert cli["argv"] == ["--job_type=2", f"--model_path={dump}", f"--tune_ops_file={home.root / 'ops.json'}"]
    assert cli["cwd"] == manifest["work_dir"]
    assert [(p["name"], p["exit_code"], p["skipped"]) for p in manifest["phases"]] == [("dump", 0, None), ("aoe", 0, None)]
    assert manifest["switch"]["calls"] == [f"torch_npu.npu.set_aoe({str(dump)!r})"]
    assert [Path(r["source"]).parent for r in manifest["result_files"]] == [Path(manifest["work_dir"])]
    assert manifest["offline"]["workspace_bytes"] > 0 and not manifest["offline"]["workspace_kept"]
    assert not (Path(manifest["work_dir"]) / "aoe_workspace").exists()
    shown = aoe_runner(home, "runs", "show", "latest").stdout
    assert f"  switch     pytorch 2.1.0.post8: torch_npu.npu.set_aoe({str(dump)!r})\n" in shown
    assert "  phase 1    dump: exit 0 in " in shown and "  phase 2    aoe: exit 0 in " in shown
    assert "workspace 0.0 MiB, removed" in shown


def test_pytorch_refuses_subgraph_tuning(home: Home) -> None:
    write(home, "train.py", PYTORCH_SCRIPT)
    done = tune(home, "train.py", "--mode", "subgraph", "--aoe", str(FAKE_AOE))
    assert done.returncode == 2
    assert "PyTorch has operator tuning only" in done.stderr


def test_pytorch_without_torch_npu_is_one_line_and_exit_4(home: Home) -> None:
    write(home, "train.py", PYTORCH_SCRIPT)
    done = aoe_runner(
        home,
        "tune",
        "--force",
        "train.py",
        "--mode",
        "op",
        "--aoe",
        str(FAKE_AOE),
        env={"FAKE_CALLS": str(home.root / "calls.jsonl")},
    )
    assert done.returncode == 4
    assert "cannot switch AOE on: torch_npu is not importable by" in done.stderr
    assert "Traceback" not in done.stderr and "argv" not in done.stdout  # the script never ran
    manifest = home.only_manifest()
    assert manifest["phases"][1]["skipped"] == "the dump phase exited 4" and manifest["phases"][1]["started_at"] is None
    assert "torch_npu is not importable" in manifest["switch"]["error"]
    assert calls(home) == []  # nor did the CLI


def test_pytorch_without_the_offline_cli_starts_nothing(home: Home) -> None:
    write(home, "train.py", PYTORCH_SCRIPT)
    done = tune(home, "train.py", "--mode", "op", PATH="/usr/bin:/bin", ASCEND_TOOLKIT_HOME=str(home.root / "no-cann"))
    assert done.returncode == 4
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "the offline AOE CLI was not found" in line and "pass --aoe PATH" in line
    assert home.manifests() == [] and calls(home) == []


def test_the_offline_cli_is_found_in_the_toolkit_the_environment_names(home: Home) -> None:
    toolkit = home.root / "toolkit"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "bin" / "aoe").symlink_to(FAKE_AOE)
    write(home, "train.py", PYTORCH_SCRIPT)
    done = tune(home, "train.py", "--mode", "op", ASCEND_TOOLKIT_HOME=str(toolkit))
    assert done.returncode == 0, done.stderr
    assert home.only_manifest()["phases"][1]["command"][0] == str(toolkit / "bin" / "aoe")


@pytest.mark.slow
def test_pytorch_that_dumps_nothing_never_runs_the_cli(home: Home) -> None:
    write(home, "train.py", PYTORCH_SCRIPT)
    done = tune(home, "train.py", "--mode", "op", "--aoe", str(FAKE_AOE), FAKE_TORCH_NO_DUMP="1")
    assert done.returncode == 1
    manifest = home.only_manifest()
    assert manifest["status"] == "failed"
    assert "no graph was dumped" in manifest["phases"][1]["skipped"]
    assert [c["who"] for c in calls(home)] == ["torch_npu"]


@pytest.mark.slow
def test_pytorch_script_that_fails_skips_the_cli(home: Home) -> None:
    write(home, "train.py", PYTORCH_SCRIPT)
    done = tune(home, "train.py", "--mode", "op", "--aoe", str(FAKE_AOE), "--", "3")
    assert done.returncode == 3
    manifest = home.only_manifest()
    assert manifest["phases"][1]["skipped"] == "the dump phase exited 3"
    assert manifest["script_exit_code"] == 3


@pytest.mark.slow
def test_the_timeout_spans_both_phases(home: Home) -> None:
    write(home, "train.py", PYTORCH_SCRIPT)
    done = tune(home, "train.py", "--mode", "op", "--aoe", str(FAKE_AOE), "--timeout", "3s", FAKE_AOE_BEHAVIOUR="stubborn")
    assert done.returncode == 124, done.stderr
    manifest = home.only_manifest()
    assert manifest["status"] == "timed_out"
    assert [(p["name"], p["exit_code"], p["signal"]) for p in manifest["phases"]] == [("dump", 0, None), ("aoe", None, "SIGKILL")]
    assert manifest["offline"]["workspace_kept"]  # a run that did not succeed keeps what it left, for a look or --reload


@pytest.mark.slow
def test_ctrl_c_in_the_cli_phase_stops_the_run(home: Home) -> None:
    write(home, "train.py", PYTORCH_SCRIPT)
    command = [sys.executable, "-m", "aoe_runner", "tune", "--force", "--grace", "0.5s", "train.py", "--mode", "op"]
    process = subprocess.Popen(
        [*command, "--aoe", str(FAKE_AOE)],
        env={**home.env, **env_for(home), "FAKE_AOE_BEHAVIOUR": "hang"},
        cwd=home.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_output(process, "aoe: tuning", stream="stdout")
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    assert process.returncode == 130
    manifest = home.only_manifest()
    assert manifest["stopped_by"] == "SIGINT"
    assert manifest["phases"][1]["signal"] == "SIGINT"
    assert manifest["leftover_processes"] == []


def test_a_model_file_is_tuned_by_the_offline_cli_and_its_tuned_model_kept(home: Home) -> None:
    write(home, "resnet.onnx", "onnx bytes")
    done = tune(home, "--model", "resnet.onnx", "--mode", "subgraph", "--aoe", str(FAKE_AOE))
    assert done.returncode == 0, done.stderr
    assert "model resnet.onnx: onnx (--framework=5, from its suffix .onnx)" in done.stderr
    (cli,) = calls(home)
    assert cli["argv"] == [f"--model={home.root / 'resnet.onnx'}", "--job_type=1"]  # AOE infers the framework itself
    manifest = home.only_manifest()
    offline = manifest["offline"]
    run_dir = home.root / "home" / "runs" / manifest["id"]
    assert [Path(model).name.endswith("_tune.om") for model in offline["tuned_models"]] == [True]
    assert (run_dir / offline["tuned_models"][0]).read_bytes() == b"fake om"
    assert offline["workspace_bytes"] >= 4096 and not offline["workspace_kept"]
    assert manifest["script"] == str(home.root / "resnet.onnx") and manifest["framework"] is None
    assert len(manifest["result_files"]) == 1


def test_keep_workspace_and_a_named_framework_are_passed_on(home: Home) -> None:
    write(home, "net.prototxt", "caffe")
    write(home, "net.caffemodel", "weights")
    argv = ("--model", "net.prototxt", "--weight", "net.caffemodel", "--model-framework", "caffe", "--mode", "op")
    done = tune(home, *argv, "--aoe", str(FAKE_AOE), "--keep-workspace")
    assert done.returncode == 0, done.stderr
    (cli,) = calls(home)
    assert cli["argv"][:2] == ["--framework=0", f"--model={home.root / 'net.prototxt'}"]
    assert f"--weight={home.root / 'net.caffemodel'}" in cli["argv"]
    manifest = home.only_manifest()
    assert manifest["offline"]["workspace_kept"]
    assert (Path(manifest["work_dir"]) / "aoe_workspace").is_dir()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--model", "net.prototxt", "--mode", "op"), "a Caffe model needs its weights"),
        (("--model", "m.onnx", "--weight", "w", "--mode", "op"), "only a Caffe model (.prototxt) takes a weight file"),
        (("train.py", "--model", "m.onnx", "--mode", "op"), "give no SCRIPT"),
        (("--model", "m.onnx", "--mode", "op", "--reload", "x"), "--reload resumes an offline subgraph tuning"),
        (("train.py", "--mode", "op", "--weight", "w"), "--weight goes with --model"),
    ],
)
def test_model_flags_that_do_not_fit_are_usage_errors(home: Home, argv: tuple[str, ...], says: str) -> None:
    for name in ("net.prototxt", "m.onnx", "w", "train.py"):
        write(home, name, "import torch\n")
    done = tune(home, *argv, "--aoe", str(FAKE_AOE))
    assert done.returncode == 2, done.stderr
    assert says in done.stderr
    assert home.manifests() == []


@pytest.mark.slow
def test_reload_resumes_an_interrupted_subgraph_tuning_in_its_workspace(home: Home) -> None:
    write(home, "resnet.onnx", "onnx bytes")
    first = tune(
        home, "--model", "resnet.onnx", "--mode", "subgraph", "--aoe", str(FAKE_AOE), "--timeout", "2s", FAKE_AOE_BEHAVIOUR="hang"
    )
    assert first.returncode == 124
    interrupted = home.only_manifest()
    assert interrupted["offline"]["workspace_kept"]
    done = tune(home, "--model", "resnet.onnx", "--mode", "subgraph", "--aoe", str(FAKE_AOE), "--reload", interrupted["id"])
    assert done.returncode == 0, done.stderr
    resumed = home.manifests()[-1]
    assert resumed["work_dir"] == interrupted["work_dir"]
    assert resumed["offline"]["reload_of"] == interrupted["id"]
    assert calls(home)[-1]["argv"][-1] == "--reload" and calls(home)[-1]["cwd"] == interrupted["work_dir"]


def test_tensorflow_runs_the_script_as_it_is_and_names_the_operator_list(home: Home) -> None:
    write(home, "train.py", "import os\nimport tensorflow\n")
    write(home, "ops.json", '{"tune_ops_name": ["a"]}')
    script = write(home, "tf_stub.py", "import os\nprint(os.environ['AOE_MODE'], os.environ['AOE_RUNNER_TUNE_OPS_FILE'])\n")
    done = tune(home, str(script), "--framework", "tf", "--mode", "op", "--tune-ops", "ops.json")
    assert done.returncode == 0, done.stderr
    assert f"2 {home.root / 'ops.json'}" in done.stdout
    assert 'custom_op.parameter_map["aoe_config_file"]' in done.stderr
    manifest = home.only_manifest()
    assert manifest["command"][1:] == [str(script)] and manifest["switch"] is None


def test_a_script_whose_framework_cannot_be_told_is_a_usage_error(home: Home) -> None:
    write(home, "train.py", "print('no framework')\n")
    done = tune(home, "train.py", "--mode", "op")
    assert done.returncode == 2
    assert "imports none of tensorflow, mindspore, torch" in done.stderr and "pass --framework" in done.stderr
    assert home.manifests() == []


def test_the_launcher_leaves_the_script_its_own_traceback_file_and_exit(home: Home) -> None:
    write(home, "train.py", "import sys\nimport torch_npu\nprint(__file__, __name__, sys.path[0])\nraise KeyError('boom')\n")
    done = tune(home, "train.py", "--mode", "op", "--aoe", str(FAKE_AOE))
    assert done.returncode == 1
    assert f"{home.root / 'train.py'} __main__ {home.root}" in done.stdout
    traceback = done.stderr[done.stderr.index("Traceback") :]
    assert "launcher.py" not in traceback and "runpy" not in traceback
    assert 'train.py", line 4, in <module>' in traceback and "KeyError: 'boom'" in traceback
    manifest = home.only_manifest()
    assert json.dumps(manifest["phases"][1]["skipped"]) == '"the dump phase exited 1"'


def test_a_dry_run_shows_both_phases_and_preflight_checks_the_pytorch_formulas(home: Home) -> None:
    write(home, "train.py", PYTORCH_SCRIPT)
    done = aoe_runner(home, "tune", "train.py", "--mode", "op", "--aoe", str(FAKE_AOE), "--dry-run", env=env_for(home))
    assert done.returncode == 1  # this host has no NPU: a real run would be refused
    assert "would run phase 1 (dump) in" in done.stdout and "would run phase 2 (aoe) in" in done.stdout
    assert f"{FAKE_AOE} --job_type=2 '--model_path=" in done.stdout  # shell-quoted: '<run id>' has a space
    refused = aoe_runner(home, "tune", "train.py", "--mode", "op", "--aoe", str(FAKE_AOE), env=env_for(home))
    assert refused.returncode == 1
    assert "host CPUs (op tuning, pytorch): 2; needs >= 76" in refused.stderr  # 8 + 8 + 1 + 1 + 58
    assert home.manifests() == [] and calls(home) == []


def test_a_workspace_of_the_users_keeps_what_was_there_before_the_run(home: Home) -> None:
    write(home, "resnet.onnx", "onnx bytes")
    old = home.root / "mine" / "aoe_workspace" / "resnet_2025" / "tunespace" / "result"
    old.mkdir(parents=True)
    (old / "resnet_2025_tune.om").write_bytes(b"last year's")
    done = tune(home, "--model", "resnet.onnx", "--mode", "subgraph", "--aoe", str(FAKE_AOE), "--work-dir", "mine")
    assert done.returncode == 0, done.stderr
    offline = home.only_manifest()["offline"]
    assert [Path(model).name for model in offline["tuned_models"]] != ["resnet_2025_tune.om"]
    assert len(offline["tuned_models"]) == 1 and offline["workspace_kept"]  # copied: the user's directory is the user's
    assert (old / "resnet_2025_tune.om").read_bytes() == b"last year's"  # neither taken nor removed
    entries = sorted(path.name for path in (home.root / "mine" / "aoe_workspace").iterdir())
    assert len(entries) == 2 and entries[0] == "resnet_2025"


def _cli(home: Home, name: str, body: str) -> Path:
    """A stand-in offline CLI: a shell script."""
    path = home.root / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return path


def test_nothing_outside_the_workspace_is_taken_for_a_tuned_model(home: Home) -> None:
    outside = home.root / "userdata" / "tunespace" / "result"
    outside.mkdir(parents=True)
    (outside / "users_tune.om").write_bytes(b"precious")
    write(home, "m.onnx", "onnx")
    cli = _cli(home, "linking-aoe", f"mkdir -p aoe_workspace && ln -s {home.root / 'userdata'} aoe_workspace/link_entry\n")
    done = tune(home, "--model", "m.onnx", "--mode", "op", "--aoe", str(cli))
    assert done.returncode == 0, done.stderr
    assert (outside / "users_tune.om").read_bytes() == b"precious"
    assert home.only_manifest()["offline"]["tuned_models"] == []


def test_an_offline_cli_that_cannot_be_started_ends_the_run_recorded(home: Home) -> None:
    write(home, "train.py", PYTORCH_SCRIPT)
    broken = _cli(home, "broken-aoe", "")
    broken.write_text("#!/nonexistent/interpreter\n", encoding="utf-8")
    done = tune(home, "train.py", "--mode", "op", "--aoe", str(broken))
    assert done.returncode == 127, done.stderr
    manifest = home.only_manifest()
    assert manifest["status"] == "failed" and manifest["ended_at"] is not None
    dump, cli = manifest["phases"]
    assert dump["exit_code"] == 0 and cli["started_at"] is None and cli["skipped"].startswith("could not be started")


def test_a_switch_report_the_script_replaced_with_a_fifo_is_not_waited_on(home: Home) -> None:
    script = (
        "import os\nimport torch_npu\n"
        "argv = open('/proc/self/cmdline', 'rb').read().split(b'\\0')\n"
        "report = argv[argv.index(b'--report') + 1].decode()\n"
        "os.remove(report)\nos.mkfifo(report)\ntorch_npu.run_model('r')\n"
    )
    write(home, "train.py", script)
    done = tune(home, "train.py", "--mode", "op", "--aoe", str(FAKE_AOE))
    assert done.returncode == 0, done.stderr
    manifest = home.only_manifest()
    assert manifest["switch"] is None and any("no report of the AOE switch" in w for w in manifest["warnings"])


def test_a_work_directory_with_bytes_that_are_not_utf8_is_recorded(home: Home) -> None:
    write(home, "train.py", PYTORCH_SCRIPT)
    work = os.fsencode(str(home.root)) + b"/w\xff"
    done = tune(home, "train.py", "--mode", "op", "--aoe", str(FAKE_AOE), "--work-dir", os.fsdecode(work))
    assert done.returncode == 0, done.stderr
    assert home.only_manifest()["status"] == "succeeded"


def test_an_old_dump_in_a_reused_work_directory_is_not_tuned(home: Home) -> None:
    old = home.root / "wd" / "dump"
    old.mkdir(parents=True)
    (old / "ge_onnx_old.pbtxt").write_text("last week's graph")
    write(home, "train.py", PYTORCH_SCRIPT)
    done = tune(home, "train.py", "--mode", "op", "--aoe", str(FAKE_AOE), "--work-dir", "wd", FAKE_TORCH_NO_DUMP="1")
    assert done.returncode == 1
    assert [c["who"] for c in calls(home)] == ["torch_npu"]


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (("--model", "m.onnx", "--mode", "op", "--tune-ops", "missing.json"), 4, "--tune-ops: no such file"),
        (("tf.py", "--framework", "tf", "--mode", "op", "--aoe", "x"), 2, "--aoe is for the offline aoe CLI"),
        (("tf.py", "--framework", "tf", "--mode", "op", "--keep-workspace"), 2, "--keep-workspace is for the offline"),
        (("--model", "m.onnx", "--mode", "subgraph", "--reload", "x", "--work-dir", "w"), 2, "give no --work-dir"),
        (("deep.py", "--mode", "op"), 2, "nested too deeply for Python's parser"),
    ],
)
def test_more_flags_that_do_not_fit(home: Home, argv: tuple[str, ...], code: int, says: str) -> None:
    write(home, "m.onnx", "onnx")
    write(home, "tf.py", "import tensorflow\n")
    write(home, "deep.py", "import torch\nx = 1" + "+1" * 20000 + "\n")
    done = tune(home, *argv, "--aoe", str(FAKE_AOE)) if "--aoe" not in argv and "tf.py" not in argv else tune(home, *argv)
    assert done.returncode == code, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr
    assert home.manifests() == []
