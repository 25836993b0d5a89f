"""`environment = "vm"` for real: Debian's kernel, fetched with apt into benchlab's cache once for
the session, boots under qemu's emulation (TCG: KVM hangs on this machine's guests) with this
system's files as its root; runs come back with the guest's kernel as their host."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from benchlab.errors import BenchlabError
from benchlab.variants import kernels
from tests.conftest import BENCHLAB, cli, need, signals_as_at_a_terminal

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def guest_kernel() -> kernels.GuestKernel:
    for tool in ("qemu-system-x86_64", "apt-get", "depmod", "udevadm"):
        need(tool)
    try:
        return kernels.resolve(None, "test")  # the kernel Debian's linux-image-amd64 points at, fetched once
    except BenchlabError as exc:
        pytest.skip(f"no Debian kernel package here: {exc}")


def _spec(path: Path, kernel: kernels.GuestKernel, workloads: dict[str, str], environment: str, blocks: int = 2) -> Path:
    text = [f'name = "{path.stem}"', f"blocks = {blocks}", "warmup = 0", "timeout = 60"]
    for name, command in workloads.items():
        text += ["[[workloads]]", f'name = "{name}"', f"command = {json.dumps(['sh', '-c', command])}"]
    text += ["[[variants]]", 'name = "guest"', f"environment = {{ kind = \"vm\", kernel = \"{kernel.source.split('_')[0]}\", "
             f'accel = "tcg", {environment} }}']  # fmt: skip
    path.write_text("\n".join(text) + "\n")
    return path


def _guests_running() -> list[str]:
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if line.startswith("qemu-system") or "/qemu-system" in line.split(" ")[0]]


def test_a_guest_loads_its_modules_writes_its_knobs_and_is_the_runs_host(
    guest_kernel: kernels.GuestKernel, tmp_path: Path
) -> None:
    if guest_kernel.switches()["lru_gen"] is None:
        pytest.skip(f"{guest_kernel.release} has no MGLRU")
    spec = _spec(
        tmp_path / "mglru.toml", guest_kernel,
        {"mglru-on": "grep -qx 0x0007 /sys/kernel/mm/lru_gen/enabled", "zram": "test -b /dev/zram0",
         "release": f'test "$(uname -r)" = {guest_kernel.release}'},
        'modules = ["zram"], knobs = { "/sys/kernel/mm/lru_gen/enabled" = "y" }',
    )  # fmt: skip
    done = cli("run", str(spec), "--db", str(tmp_path / "r.db"), "--format", "json", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert not report["failed_runs"] and len(report["runs"]) == 2 * 3
    host = report["experiment"]["host"]
    assert host["kernel"] == guest_kernel.release and host["emulated"] is True and host["accel"] == "tcg"
    assert host["kernel_switches"]["lru_gen"] == "y"
    assert any("emulated (qemu TCG)" in w for w in report["warnings"])
    assert _guests_running() == []


def test_what_the_guest_kernel_lacks_is_one_line_naming_it(guest_kernel: kernels.GuestKernel, tmp_path: Path) -> None:
    missing = cli("run", str(_spec(tmp_path / "m.toml", guest_kernel, {"t": "true"}, 'modules = ["no_such_module"]')),
                  "--db", str(tmp_path / "r.db"))  # fmt: skip
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert f"the guest kernel {guest_kernel.release} has no module no_such_module" in missing.stderr
    knob = cli("run", str(_spec(tmp_path / "k.toml", guest_kernel, {"t": "true"}, 'knobs = { "/sys/kernel/mm/no_knob" = "1" }')),
               "--db", str(tmp_path / "r.db"), timeout=600)  # fmt: skip
    assert knob.returncode == 2 and knob.stderr.count("\n") == 1, knob.stderr
    assert f"the guest kernel {guest_kernel.release} has no /sys/kernel/mm/no_knob" in knob.stderr
    assert _guests_running() == []


def test_a_guest_that_panics_fails_its_run_and_the_next_run_boots_a_new_one(
    guest_kernel: kernels.GuestKernel, tmp_path: Path
) -> None:
    spec = _spec(tmp_path / "panic.toml", guest_kernel, {"panic": "echo c > /proc/sysrq-trigger; sleep 5"}, "cpus = 1")
    done = cli("run", str(spec), "--db", str(tmp_path / "r.db"), "--format", "json", timeout=900)
    assert done.returncode == 5, done.stderr[-2000:]
    failed = json.loads(done.stdout)["failed_runs"]
    assert len(failed) == 2  # both blocks ran: the second in a new guest
    assert all("stopped answering" in run["message"] for run in failed)
    assert _guests_running() == []


def test_kill_9_leaves_no_guest_and_resume_finishes_on_the_same_host(guest_kernel: kernels.GuestKernel, tmp_path: Path) -> None:
    spec = _spec(tmp_path / "resume.toml", guest_kernel, {"nap": "sleep 0.2"}, "cpus = 1", blocks=3)
    db = str(tmp_path / "r.db")
    proc = subprocess.Popen([BENCHLAB, "run", str(spec), "--db", db], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=signals_as_at_a_terminal)  # fmt: skip
    deadline = time.monotonic() + 300
    while not _guests_running() and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(20)  # booted, and likely amid its runs
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while _guests_running() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _guests_running() == []
    resumed = cli("run", str(spec), "--db", db, "--resume", "--format", "json", timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    report = json.loads(resumed.stdout)
    assert len(report["runs"]) == 3 and len({run["host"] for run in report["runs"]}) == 1  # one guest identity
