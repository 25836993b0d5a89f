"""The cgroups under which every run gets fresh ones of its own (made, joined and
removed by the launcher): memory, so that the peak memory of the whole process tree can
be read (wait4 only knows the largest single process), and the limits of a container
environment; cgroup v1's separate cpu hierarchy for a container's CPU limit.

Each run's cgroup is named after its launcher (`run-PID`; a launcher that serves an
experiment's runs makes one per run, in turn), so that one whose launcher died uncleanly
(killed on a timeout, or with a runner killed by `kill -9`) can be told from a live one:
`clear_stale_runs` kills what is left in it and removes it. A cgroup is removed only once
every process in it is gone (the kernel refuses it before)."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

V1_MEMORY = Path("/sys/fs/cgroup/memory")
V1_CPU = Path("/sys/fs/cgroup/cpu")
V2_ROOT = Path("/sys/fs/cgroup")


@functools.cache
def run_cgroup_parent() -> tuple[str | None, str | None]:
    """(folder for per-run cgroups, None) or (None, why there is none). cgroup v1's memory
    hierarchy where mounted, else the unified v2 hierarchy with its memory controller."""
    try:
        if (V1_MEMORY / "memory.max_usage_in_bytes").exists() or (V1_MEMORY / "cgroup.procs").exists():
            parent = V1_MEMORY / "benchlab"
            parent.mkdir(exist_ok=True)
            return str(parent), None
        if "memory" in (V2_ROOT / "cgroup.controllers").read_text().split():
            parent = V2_ROOT / "benchlab"
            parent.mkdir(exist_ok=True)
            for folder in (V2_ROOT, parent):  # children of benchlab/ get memory and cpu controllers
                (folder / "cgroup.subtree_control").write_text("+memory +cpu")
            return str(parent), None
        return None, "no memory cgroup controller is mounted"
    except OSError as exc:
        return None, f"cannot make a memory cgroup for runs ({exc.strerror or exc}; needs root)"


@functools.cache
def cpu_cgroup_parent() -> str | None:
    """cgroup v1's cpu hierarchy for per-run CPU limits; None under v2, where the memory
    cgroup carries `cpu.max` too."""
    if not (V1_CPU / "cpu.cfs_quota_us").exists():
        return None
    parent = V1_CPU / "benchlab"
    with contextlib.suppress(OSError):
        parent.mkdir(exist_ok=True)
        return str(parent)
    return None


REMOVE_WAIT_S = 5.0  # killed processes leave their cgroup when they have exited, within milliseconds


def _run_cgroups() -> Iterator[Path]:
    for parent in (run_cgroup_parent()[0], cpu_cgroup_parent()):
        if parent is not None:
            with contextlib.suppress(OSError):
                yield from (p for p in Path(parent).iterdir() if p.is_dir() and p.name.startswith("run-"))


def _remove(folder: Path) -> bool:
    """Kills everything in `folder` (cgroup.kill under v2, each process under v1) until the
    kernel lets the cgroup go; False if it still holds processes after REMOVE_WAIT_S. The
    cgroups a workload made inside it (the app cycle's, one per app) go first, deepest first."""
    with contextlib.suppress(OSError):
        for child in [p for p in folder.iterdir() if p.is_dir()]:
            if not _remove(child):
                return False
    deadline = time.monotonic() + REMOVE_WAIT_S
    while True:
        try:
            folder.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
        if (folder / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (folder / "cgroup.kill").write_text("1")
        else:
            with contextlib.suppress(OSError, ValueError):
                for pid in (folder / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.005)


def remove_run_cgroup(launcher_pid: int) -> None:
    """Removes the cgroups of a launcher that was killed before it could (a timeout)."""
    for parent in (run_cgroup_parent()[0], cpu_cgroup_parent()):
        if parent is not None:
            _remove(Path(parent) / f"run-{launcher_pid}")


def _launcher_alive(pid: int) -> bool:
    """A running launcher: a killed one stays a zombie, comm and all, until it is reaped."""
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return comm == "benchlab-launch" and state not in ("Z", "X")


def clear_stale_runs() -> list[str]:
    """Kills what runs of a dead launcher left in their cgroups, and removes those cgroups; the
    runs of live launchers (another experiment's) are left alone. Returns notes for the user."""
    notes = []
    for folder in _run_cgroups():
        pid = folder.name.removeprefix("run-")
        if pid.isdigit() and _launcher_alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            left = (folder / "cgroup.procs").read_text().split()
            if left:
                notes.append(f"killed {len(left)} process(es) left by an earlier run that was interrupted ({folder})")
        if not _remove(folder):
            notes.append(f"cannot remove {folder}: processes in it outlive SIGKILL")
    return notes


def tree_peak_unavailable() -> str | None:
    reason = run_cgroup_parent()[1]
    return f"tree peak memory not measured: {reason}" if reason else None
