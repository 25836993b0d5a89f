"""The memory cgroup under which every run gets a fresh cgroup of its own (made, joined
and removed by the launcher), so that the peak memory of the whole process tree can be
read: wait4 only knows the largest single process."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
from pathlib import Path

V1_MEMORY = Path("/sys/fs/cgroup/memory")
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
            for folder in (V2_ROOT, parent):  # children of benchlab/ get a memory controller
                (folder / "cgroup.subtree_control").write_text("+memory")
            return str(parent), None
        return None, "no memory cgroup controller is mounted"
    except OSError as exc:
        return None, f"cannot make a memory cgroup for runs ({exc.strerror or exc}; needs root)"


def remove_run_cgroup(launcher_pid: int) -> None:
    """Removes the cgroup of a launcher that was killed before it could (a timeout)."""
    parent = run_cgroup_parent()[0]
    if parent is None:
        return
    folder = Path(parent) / f"run-{launcher_pid}"
    with contextlib.suppress(OSError):
        for pid in (folder / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)
        folder.rmdir()


def tree_peak_unavailable() -> str | None:
    reason = run_cgroup_parent()[1]
    return f"tree peak memory not measured: {reason}" if reason else None
