"""Gathering facts on this real host, with a CANN install, aoe.ini and npu-smi laid out in a temporary home."""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from aoe_runner.common.devlock import DeviceBusy, DeviceLock, LockHolder, current_holder
from aoe_runner.preflight.cann import read_aoe_ini
from aoe_runner.preflight.facts import gather_facts


def _executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


NPU_SMI_TABLE = """\
import sys
print('+------------------------------------------------------------------------------------------------+')
print('| npu-smi 23.0.3                   Version: 23.0.3                                               |')
print('| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|')
print('| 0     910B3               | OK            | 93.2        43                0    / 0             |')
print('| 1     910B3               | OK            | 90.1        41                0    / 0             |')
"""


def test_the_real_host_is_measured(tmp_path: Path) -> None:
    facts = gather_facts(env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert facts.logical_cpus == os.cpu_count()
    assert facts.affinity_cpus == len(os.sched_getaffinity(0))
    assert 0 < facts.available_memory_bytes
    # the kernel's MemAvailable, read by preflight itself, is what psutil reports (less what changed in between)
    assert facts.sources["available_memory_bytes"] == "MemAvailable in /proc/meminfo"
    assert abs(facts.available_memory_bytes - psutil.virtual_memory().available) < 256 * 2**20
    assert facts.hostname == socket.gethostname()
    home = facts.disk("home")
    assert home is not None and home.free_bytes and home.measured_at == str(tmp_path)
    assert facts.cann.set_env_scripts == [] and facts.cann.toolkit_home is None
    assert facts.aoe_ini.path is None and str(tmp_path / "Ascend/cann/conf/aoe.ini") in facts.aoe_ini.searched


def test_cann_install_version_aoe_ini_and_npu_smi_in_a_home(tmp_path: Path) -> None:
    toolkit = tmp_path / "Ascend/ascend-toolkit"
    (toolkit / "latest/tools/aoe/conf").mkdir(parents=True)
    (toolkit / "set_env.sh").write_text("export ASCEND_TOOLKIT_HOME=...\n")
    (toolkit / "latest/version.cfg").write_text("# comment\nruntime_running_version=[8.0.RC3:8.0.RC3]\n")
    (tmp_path / "Ascend/latest/tools/aoe/conf").mkdir(parents=True)
    (tmp_path / "Ascend/latest/tools/aoe/conf/aoe.ini").write_text(
        "; engine\nTUNING_PARALLEL_NUM = 12  # two thirds\nRUN_LOOP=10\n"
    )
    bin_dir = tmp_path / "bin"
    _executable(bin_dir / "npu-smi", NPU_SMI_TABLE)
    facts = gather_facts(env={"HOME": str(tmp_path), "PATH": str(bin_dir)})
    assert facts.cann.set_env_scripts == [str(toolkit / "set_env.sh")]
    assert (facts.cann.version, facts.cann.version_file) == ("8.0.RC3", str(toolkit / "latest/version.cfg"))
    assert facts.aoe_ini.tuning_parallel_num == "12"
    assert facts.npus.chips == ["910B3", "910B3"]
    assert (facts.soc, facts.sources["soc"]) == ("Ascend910B3", "npu-smi info")


def test_a_hanging_npu_smi_is_cut_off_and_reported(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _executable(bin_dir / "npu-smi", "import subprocess, time\nsubprocess.Popen(['sleep', '60'])\ntime.sleep(60)\n")
    facts = gather_facts(env={"HOME": str(tmp_path), "PATH": f"{bin_dir}:/usr/bin:/bin"}, soc="Ascend310P3")
    assert facts.npus.npu_smi_error == f"{bin_dir / 'npu-smi'} did not finish within 2 s"
    assert (facts.soc, facts.sources["soc"]) == ("Ascend310P3", "--soc")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TUNING_PARALLEL_NUM=8\n", "8"),
        ("[aoe]\nTUNING_PARALLEL_NUM = 16\n", "16"),
        ("# nothing here\nRUN_LOOP=10\n", None),
        ("TUNING_PARALLEL_NUM=4 ; four\n", "4"),
    ],
)
def test_aoe_ini_with_or_without_a_section(tmp_path: Path, text: str, expected: str | None) -> None:
    ini = tmp_path / "aoe.ini"
    ini.write_text(text)
    values = read_aoe_ini(ini)
    assert (values.tuning_parallel_num, values.error) == (expected, None)


def test_relative_bank_and_work_paths_are_resolved_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bank").mkdir()
    facts = gather_facts(env={"HOME": str(tmp_path), "TUNE_BANK_PATH": "bank", "ASCEND_WORK_PATH": "out/new"})
    bank, work = facts.path_state("TUNE_BANK_PATH"), facts.path_state("ASCEND_WORK_PATH")
    assert bank and (bank.path, bank.is_dir, bank.access) == (str(tmp_path / "bank"), True, "rwx")
    assert work and (work.exists, work.nearest_existing, work.nearest_writable) == (False, str(tmp_path), True)


HOLD_LOCK = """\
import sys, time
from aoe_runner.common.devlock import DeviceLock, LockHolder
DeviceLock(int(sys.argv[1])).acquire(LockHolder(user="bob", pid=0, host="h", started_at="t", command="hold"))
print("held", flush=True)
time.sleep(60)
"""


def test_the_device_lock_is_seen_while_held_and_released_when_its_holder_dies(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, "5"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout and holder.stdout.readline() == "held\n"
        seen = current_holder(5)
        me = pwd.getpwuid(os.geteuid()).pw_name  # the lock file's owner, not the "bob" it claims
        assert seen is not None and (seen.user, seen.command) == (me, "hold")
        facts = gather_facts(env={"HOME": str(tmp_path), "ASCEND_DEVICE_ID": "5"})
        assert facts.device_lock_holder == seen
        with pytest.raises(DeviceBusy, match=f"device 5 is being tuned by another run .user {me}, pid 0 on h"):
            DeviceLock(5).acquire(LockHolder(user="me", pid=1, host="h", started_at="t", command="x"))
    finally:
        holder.kill()
        holder.wait()
    assert current_holder(5) is None  # a dead holder blocks nobody
    with DeviceLock(5).acquire(LockHolder(user="me", pid=1, host="h", started_at="t", command="x")):
        assert current_holder(5) is None or current_holder(5).command == "x"  # type: ignore[union-attr]
