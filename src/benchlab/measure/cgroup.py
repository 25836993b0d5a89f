"""The cgroups under which every run gets fresh ones of its own (made, joined and
removed by the launcher): memory, so that the peak memory of the whole process tree can
be read (wait4 only knows the largest single process), and the limits of a container
environment; cgroup v1's separate cpu hierarchy for a container's CPU limit."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
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


def remove_run_cgroup(launcher_pid: int) -> None:
    """Removes the cgroups of a launcher that was killed before it could (a timeout)."""
    for parent in (run_cgroup_parent()[0], cpu_cgroup_parent()):
        if parent is None:
            continue
        folder = Path(parent) / f"run-{launcher_pid}"
        with contextlib.suppress(OSError):
            for pid in (folder / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)
            folder.rmdir()


def tree_peak_unavailable() -> str | None:
    reason = run_cgroup_parent()[1]
    return f"tree peak memory not measured: {reason}" if reason else None
