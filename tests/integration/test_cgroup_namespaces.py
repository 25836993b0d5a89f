"""Run cgroups shared by benchlabs in several PID namespaces (the host's and a container's, or a
fleet worker's in one): `clear_stale_runs` clears only what is stale for sure, whatever namespace
judges. A benchlab in a new PID namespace (`unshare --pid`) starts a launcher as it starts every
run; the host's clearing leaves that run and its process alone, removes a stale run of its own
(killing what is left in it) and one of the layout before namespaces, and once the other
namespace is gone, its leftovers too."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchlab.measure.cgroup import INITIAL_PID_NAMESPACE, clear_stale_runs, run_cgroup_parent
from tests.conftest import need

pytestmark = [
    pytest.mark.serial,
    pytest.mark.skipif(os.geteuid() != 0, reason="cgroups and PID namespaces need root"),
]  # serial: this machine's cgroups

# in the new namespace: a launcher as benchlab starts one (`start_launcher`), running a sleep in its run cgroup
CONTAINED = """
import subprocess
from benchlab.measure.cgroup import clear_stale_runs
from benchlab.measure.process import start_launcher
clear_stale_runs()  # as the runner does first (a namespace gone before may have left a cgroup of this name)
proc = start_launcher(["--", "sleep", "60"], env={"PATH": "/usr/bin:/bin"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(proc.pid, flush=True)
proc.wait()
"""


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _sleeper_in(cgroup: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A process left in `cgroup`, as a killed launcher leaves its run's."""
    cgroup.mkdir()
    proc = subprocess.Popen(["sleep", "60"])
    (cgroup / "cgroup.procs").write_text(str(proc.pid))
    return proc, cgroup


def _procs(cgroup: Path) -> list[str]:
    try:
        return (cgroup / "cgroup.procs").read_text().split()
    except FileNotFoundError:
        return []


def _gone(proc: subprocess.Popen[bytes]) -> bool:
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        return False
    return True


def _wait_for(check: object, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.02)


def test_clearing_leaves_another_namespaces_live_run_alone_and_clears_what_is_stale(tmp_path: Path) -> None:
    parent, why = run_cgroup_parent()
    if parent is None:
        pytest.skip(why or "no run cgroup")
    if os.stat("/proc/self/ns/pid").st_ino != INITIAL_PID_NAMESPACE:
        pytest.skip("the test judges from the initial PID namespace")
    ours, top = Path(parent), Path(parent).parent
    contained = subprocess.Popen(
        [need("unshare"), "--pid", "--fork", "--mount-proc", sys.executable, "-c", CONTAINED],
        stdout=subprocess.PIPE, env={**os.environ}, start_new_session=True,
    )  # fmt: skip
    stale, stale_cgroup = _sleeper_in(ours / f"run-{_dead_pid()}")
    legacy, legacy_cgroup = _sleeper_in(top / f"run-{_dead_pid()}")  # named as before namespaces, by a launcher of ours
    try:
        assert contained.stdout is not None
        inner = int(contained.stdout.readline())  # the launcher's PID in its own namespace

        def theirs() -> list[Path]:
            return [p for p in top.glob(f"pidns-*/run-{inner}") if p.parent != ours and _procs(p)]

        _wait_for(theirs)
        (foreign,) = theirs()
        held = _procs(foreign)

        notes = clear_stale_runs()

        assert _procs(foreign) == held  # left alone...
        assert all(Path(f"/proc/{pid}").exists() for pid in held) and contained.poll() is None  # ...and alive
        assert _gone(stale) and not stale_cgroup.exists(), notes  # ours, its launcher dead: killed and removed
        assert _gone(legacy) and not legacy_cgroup.exists(), notes  # every process in it of this namespace: ours
        assert {
            f"killed 1 process(es) left by an earlier run that was interrupted ({c})" for c in (stale_cgroup, legacy_cgroup)
        } <= set(notes)

        os.killpg(contained.pid, 9)  # the namespace ends: its init and every process in it die
        contained.wait()
        # a gone namespace's leftovers go too, once its last process (the launcher, dying) is reaped
        _wait_for(lambda: not clear_stale_runs() and not foreign.exists() and not foreign.parent.exists(), 10)
    finally:
        for proc in (stale, legacy):
            proc.kill()
        if contained.poll() is None:
            os.killpg(contained.pid, 9)
            contained.wait()
