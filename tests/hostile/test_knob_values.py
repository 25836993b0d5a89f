"""Knobs put back to exactly what they held, an empty value included, and knobs that make the
kernel start a program (kernel helpers) never written at all.

An empty original value was "written back" as zero bytes, which is no write(2) at all: a knob
that was empty (cgroup v1's `release_agent`) kept the experiment's value, and after a `kill -9`
`benchlab restore` said it had nothing to do. The knob here is a fresh cpuset cgroup's CPU list,
empty until written, in a cgroup of this test's own: nothing else on the machine reads it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchlab.fleet.allowlist import AllowList, Refused
from benchlab.fleet.worker import BlockWorker, WorkerSettings
from benchlab.measure.process import Finished, Launch
from benchlab.runner import Prepared, Runner
from benchlab.spec.validate import spec_from_dict
from benchlab.store import Store
from benchlab.variants.knobs import kernel_helper
from tests.conftest import BENCHLAB, cli, signals_as_at_a_terminal
from tests.hostile.conftest import refused
from tests.unit.test_fleet_worker import KEY, TRUE, _envelope
from tests.unit.test_runner import FakeExecutor

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="knobs and cgroups need root")


@pytest.fixture
def empty_knob() -> Iterator[str]:
    """`cpuset.cpus` of a new cpuset cgroup (v1, or v2 with cpuset enabled): empty until written."""
    if os.geteuid() != 0:
        pytest.skip("knobs and cgroups need root")
    for root in (Path("/sys/fs/cgroup/cpuset"), Path("/sys/fs/cgroup")):
        knob = root / f"benchlab-test-{uuid.uuid4().hex[:12]}" / "cpuset.cpus"
        try:
            knob.parent.mkdir()
        except OSError:
            continue
        try:
            if knob.is_file() and knob.read_text().strip() == "":
                yield str(knob)
                return
        finally:
            _write_empty(knob)
            knob.parent.rmdir()
    pytest.skip("no cpuset cgroup to make a knob whose value is empty")


def _write_empty(knob: Path) -> None:
    if knob.is_file():
        fd = os.open(knob, os.O_WRONLY)
        os.write(fd, b"\n")
        os.close(fd)


def knob_spec(path: Path, knob: str, command: str, *, blocks: int = 2) -> Path:
    path.write_text(
        f'name = "empty-knob"\nblocks = {blocks}\nwarmup = 0\n[[workloads]]\nname = "w"\ncommand = {command!r}\n'
        f'[[variants]]\nname = "a"\nknobs = {{ "{knob}" = "0" }}\n'
    )
    return path


def test_an_empty_knob_is_empty_again_after_the_experiment(tmp_path: Path, empty_knob: str) -> None:
    seen = tmp_path / "seen"
    spec = knob_spec(tmp_path / "s.toml", empty_knob, f"sh -c 'cat {empty_knob} >> {seen}'")
    cli("run", str(spec), check=True)
    assert seen.read_text().split() == ["0", "0"]  # set for each run
    assert Path(empty_knob).read_text().strip() == ""
    assert cli("restore", check=True).stdout.startswith("nothing to restore")


def kill_9_once_started(proc: subprocess.Popen[Any], started: Path) -> None:
    """Waits (at most 60 s) until the run touched `started`, then kills proc with SIGKILL, whatever happened."""
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert started.exists(), proc.stderr.read() if proc.stderr and proc.poll() is not None else "no run started"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def test_an_empty_knob_left_set_by_kill_9_is_put_back_by_restore(tmp_path: Path, empty_knob: str) -> None:
    started = tmp_path / "started"
    spec = knob_spec(tmp_path / "s.toml", empty_knob, f"sh -c 'touch {started}; sleep 60'", blocks=3)
    proc = subprocess.Popen([BENCHLAB, "run", str(spec)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=signals_as_at_a_terminal)  # fmt: skip
    kill_9_once_started(proc, started)
    assert Path(empty_knob).read_text().strip() == "0"  # left changed
    again = cli("run", str(spec))  # a new experiment will not start (it clears the killed one's note)
    assert again.returncode == 3 and "benchlab restore" in again.stderr, again.stderr
    restored = cli("restore", check=True).stdout
    assert f"restored {empty_knob} = ''" in restored, restored
    assert Path(empty_knob).read_text().strip() == ""
    assert cli("restore", check=True).stdout.startswith("nothing to restore")


class KnobReader(FakeExecutor):
    """Runs nothing, but reads the knob while the run would be running."""

    def __init__(self, knob: str) -> None:
        super().__init__()
        self.knob, self.seen = knob, []

    def run(self, launch: Launch) -> Finished:
        self.seen.append(Path(self.knob).read_text().strip())
        return super().run(launch)


def test_a_fleet_worker_puts_an_empty_knob_back_after_its_block(tmp_path: Path, empty_knob: str) -> None:
    db = str(tmp_path / "fleet.db")
    raw = {
        "name": "fleet-exp", "blocks": 2, "warmup": 0, "workloads": [{"name": "t", "command": [TRUE]}],
        "variants": [{"name": "a", "knobs": {empty_knob: "0"}}],
    }  # fmt: skip
    Runner(Store(db), executor=FakeExecutor()).open_experiment(Prepared.from_spec(spec_from_dict(raw, "t")), resume=False)
    executor = KnobReader(empty_knob)
    allow = AllowList.of([TRUE], machine_state=True)
    worker = BlockWorker(WorkerSettings(pool="lab", db=db, key=KEY, allow=allow, name="w1"),
                         fingerprint=lambda: {"hostname": "h1", "kernel": "test"}, executor=executor)  # fmt: skip
    assert worker.handle(_envelope(db, "t", 0)) == "done"
    assert executor.seen == ["0"]
    assert Path(empty_knob).read_text().strip() == ""
    assert cli("restore", check=True).stdout.startswith("nothing to restore")


WORKER = """
import sys, time
from pathlib import Path
from benchlab.fleet.allowlist import AllowList
from benchlab.fleet.worker import BlockWorker, WorkerSettings
from benchlab.runner import Prepared, Runner
from benchlab.spec.validate import spec_from_dict
from benchlab.store import Store
from tests.unit.test_fleet_worker import KEY, TRUE, _envelope
from tests.unit.test_runner import FakeExecutor

db, knob, started = sys.argv[1:]
raw = {"name": "fleet-exp", "blocks": 2, "warmup": 0, "workloads": [{"name": "t", "command": [TRUE]}],
       "variants": [{"name": "a", "knobs": {knob: "0"}}]}
Runner(Store(db), executor=FakeExecutor()).open_experiment(Prepared.from_spec(spec_from_dict(raw, "t")), resume=False)

class Stuck(FakeExecutor):
    def run(self, launch):
        Path(started).touch()
        time.sleep(60)

settings = WorkerSettings(pool="lab", db=db, key=KEY, allow=AllowList.of([TRUE], machine_state=True), name="w1")
BlockWorker(settings, fingerprint=lambda: {"hostname": "h1", "kernel": "test"}, executor=Stuck()).handle(_envelope(db, "t", 0))
"""


def test_an_empty_knob_left_set_by_a_killed_fleet_worker_is_put_back_by_restore(tmp_path: Path, empty_knob: str) -> None:
    started = tmp_path / "started"
    proc = subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path / "fleet.db"), empty_knob, str(started)],
                            stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])  # fmt: skip
    kill_9_once_started(proc, started)
    assert Path(empty_knob).read_text().strip() == "0"  # left changed by the killed worker
    restored = cli("restore", check=True).stdout
    assert f"restored {empty_knob} = ''" in restored, restored
    assert Path(empty_knob).read_text().strip() == ""


# --- kernel helpers ---------------------------------------------------------------------------

HELPERS = [
    "/sys/fs/cgroup/memory/release_agent",
    "/sys/fs/cgroup/memory/benchlab/notify_on_release",
    "/sys/fs/cgroup/cpuset/notify_on_release",
    "/proc/sys/kernel/core_pattern",
    "/proc/sys/kernel/modprobe",
    "/proc/sys/kernel/hotplug",
    "/sys/kernel/uevent_helper",
    "/proc/sys/kernel/poweroff_cmd",
    "/proc/sys/kernel/usermodehelper/bset",
    "/proc/sys/fs/binfmt_misc/register",
    "/proc/sys/fs/binfmt_misc/status",
    "/sys/module/nfsd/parameters/cltrack_prog",
    "/sys/module/drbd/parameters/usermode_helper",
    "/sys/module/firmware_class/parameters/path",
]


@pytest.mark.parametrize("knob", HELPERS)
def test_a_fleet_worker_refuses_every_kernel_helper_knob(knob: str) -> None:
    spec = spec_from_dict(
        {"name": "x", "workloads": [{"name": "t", "builtin": "alloc.churn"}], "variants": [{"name": "a", "knobs": {knob: "1"}}]},
        "t",
    )
    assert kernel_helper(knob)
    with pytest.raises(Refused, match="a program the kernel runs as root"):
        AllowList.of([], machine_state=True).check(spec)


def test_ordinary_knobs_are_no_kernel_helpers() -> None:
    for knob in ("/proc/sys/vm/swappiness", "/sys/fs/cgroup/cpuset/x/cpuset.cpus", "/proc/sys/net/netfilter/nf_conntrack_helper"):
        assert not kernel_helper(knob)


@root_only
@pytest.mark.parametrize("knob", [k for k in HELPERS if os.path.isfile(k)][:3] or ["/proc/sys/kernel/core_pattern"])
def test_a_local_experiment_refuses_a_kernel_helper_knob(tmp_path: Path, knob: str) -> None:
    before = Path(knob).read_text() if os.path.isfile(knob) else None
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'name = "h"\n[[workloads]]\nname = "w"\ncommand = "true"\n[[variants]]\nname = "a"\nknobs = {{ "{knob}" = "/bin/true" }}\n'
    )
    refused("run", str(spec), code=2, mentions="kernel helper")
    assert (Path(knob).read_text() if os.path.isfile(knob) else None) == before


@root_only
def test_restore_never_writes_a_kernel_helper_a_journal_names(tmp_path: Path) -> None:
    knob = "/proc/sys/kernel/core_pattern"
    before = Path(knob).read_text()
    journal = Path(os.environ["BENCHLAB_STATE_DIR"]) / "knobs.journal"
    journal.parent.mkdir(parents=True)
    journal.write_text(f'{{"path": "{knob}", "original": "|/bin/sh -c touch {tmp_path}/PWNED"}}\n')
    proc = cli("restore", check=True)
    assert "kernel helper" in proc.stdout and "skipped" in proc.stdout, proc.stdout
    assert Path(knob).read_text() == before and not (tmp_path / "PWNED").exists() and not journal.exists()
