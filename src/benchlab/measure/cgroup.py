"""The cgroups under which every run gets fresh ones of its own (made, joined and
removed by the launcher): memory, so that the peak memory of the whole process tree can
be read (wait4 only knows the largest single process), and the limits of a container
environment; cgroup v1's separate cpu hierarchy for a container's CPU limit.

Each run's cgroup is named after its launcher (`run-PID`; a launcher that serves an
experiment's runs makes one per run, in turn), so that one whose launcher died uncleanly
(killed on a timeout, or with a runner killed by `kill -9`) can be told from a live one:
`clear_stale_runs` kills what is left in it and removes it. A cgroup is removed only once
every process in it is gone (the kernel refuses it before).

A PID means something only in its PID namespace, and the cgroup tree may be shared by
benchlabs in several (one on the host, one in a container or on a fleet worker in one). So the
run cgroups live in a folder per PID namespace, `benchlab/pidns-INODE/run-PID` (INODE: that of
`/proc/self/ns/pid`, unique among the namespaces alive), and `clear_stale_runs` judges by PID
only those of its own namespace. Another namespace's folder is touched only when that namespace
is gone for sure: seen from the initial namespace (which sees every process) no process lives
in it, and then its run cgroups can hold none of its own and are removed where they are empty;
from inside a container an ancestor's processes are out of sight, so nothing foreign is touched
there (an ssh host's runs use the same layout: measure/remote.py). A run cgroup of the layout
before this one (`benchlab/run-PID`, left by an earlier version) names no namespace: it is
judged ours (its launcher gone: killed and removed) only when every process in it is of our
namespace; where it holds none it is removed if the kernel lets it go (v1's `cgroup.procs`
omits processes out of sight, and `rmdir` fails on them), and one holding another namespace's
processes is left alone."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from pathlib import Path

V1_MEMORY = Path("/sys/fs/cgroup/memory")
V1_CPU = Path("/sys/fs/cgroup/cpu")
V2_ROOT = Path("/sys/fs/cgroup")
NAMESPACE_PREFIX = "pidns-"
INITIAL_PID_NAMESPACE = 0xEFFFFFFC  # the kernel's fixed inode of the initial PID namespace (PROC_PID_INIT_INO)


def _pid_namespace(pid: str = "self") -> int:
    """The inode of a process's PID namespace (OSError where it is gone or out of reach)."""
    return os.stat(f"/proc/{pid}/ns/pid").st_ino


@functools.cache
def own_namespace_folder() -> str:
    """The folder of this PID namespace's run cgroups: a process never changes its own."""
    return f"{NAMESPACE_PREFIX}{_pid_namespace()}"


@functools.cache
def run_cgroup_parent() -> tuple[str | None, str | None]:
    """(folder for per-run cgroups, None) or (None, why there is none). cgroup v1's memory
    hierarchy where mounted, else the unified v2 hierarchy with its memory controller."""
    try:
        if (V1_MEMORY / "memory.max_usage_in_bytes").exists() or (V1_MEMORY / "cgroup.procs").exists():
            parent = V1_MEMORY / "benchlab" / own_namespace_folder()
            parent.mkdir(parents=True, exist_ok=True)
            return str(parent), None
        if "memory" in (V2_ROOT / "cgroup.controllers").read_text().split():
            parent = V2_ROOT / "benchlab" / own_namespace_folder()
            for folder in (V2_ROOT, parent.parent, parent):  # each level's children get memory and cpu controllers
                folder.mkdir(exist_ok=True)
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
    parent = V1_CPU / "benchlab" / own_namespace_folder()
    with contextlib.suppress(OSError):
        parent.mkdir(parents=True, exist_ok=True)
        return str(parent)
    return None


REMOVE_WAIT_S = 5.0  # killed processes leave their cgroup when they have exited, within milliseconds


def _folders(parent: Path, prefix: str) -> list[Path]:
    with contextlib.suppress(OSError):
        return [p for p in parent.iterdir() if p.is_dir() and p.name.startswith(prefix)]
    return []


def _procs(folder: Path) -> list[str]:
    """The processes in a cgroup, as this PID namespace numbers them (v1 leaves out those out of
    its sight, v2 shows them as 0)."""
    with contextlib.suppress(OSError):
        return (folder / "cgroup.procs").read_text().split()
    return []


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
                    if int(pid) > 0:  # v2's 0: a process out of this namespace's sight (and kill(0) is our own group)
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


def _remove_if_empty(folder: Path) -> bool:
    """Removes a cgroup that holds no process, nested ones first, killing nothing: the kernel
    refuses (False) one that holds any, those out of this namespace's sight included."""
    for child in _folders(folder, ""):
        if not _remove_if_empty(child):
            return False
    try:
        folder.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _living_namespaces() -> set[int] | None:
    """The PID namespaces of every process in sight; None where that cannot be all of them (not
    the initial namespace, or a process out of reach)."""
    if _pid_namespace() != INITIAL_PID_NAMESPACE:
        return None
    seen = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                seen.add(_pid_namespace(entry))
            except (FileNotFoundError, ProcessLookupError):
                continue  # it exited meanwhile
            except OSError:  # out of reach (init, where a sandbox hides it): of ours if it has no PID in another
                if not _numbered_here_only(entry):
                    return None
    return seen


def _numbered_here_only(pid: str) -> bool:
    """Whether a process has a PID in this namespace only (`NSpid`: one per namespace it is in,
    from this one down): then it is of this namespace."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return len(line.split()) == 2
    return False


def clear_stale_runs() -> list[str]:
    """Kills what runs of a dead launcher of this PID namespace left in their cgroups, and removes
    those cgroups; the runs of live launchers (another experiment's) are left alone, and so is
    another namespace's (the module's docstring says when one is cleared). Returns notes for the user."""
    notes: list[str] = []
    own = own_namespace_folder()
    living = functools.cache(_living_namespaces)  # read once, where a foreign namespace's folder asks
    for parent in (run_cgroup_parent()[0], cpu_cgroup_parent()):
        if parent is None:
            continue
        top = Path(parent).parent
        for folder in _folders(top, NAMESPACE_PREFIX):
            if folder.name == own:
                for run in _folders(folder, "run-"):
                    _clear_ours(run, notes)
                continue
            inode, seen = folder.name.removeprefix(NAMESPACE_PREFIX), living()
            gone = seen is not None and inode.isdigit() and int(inode) not in seen
            if gone and all([_remove_if_empty(run) for run in _folders(folder, "run-")]):
                with contextlib.suppress(OSError):
                    folder.rmdir()
        for run in _folders(top, "run-"):  # the layout before namespaces: judged ours only by its processes
            pid = run.name.removeprefix("run-")
            if pid.isdigit() and _launcher_alive(int(pid)):
                continue
            left = _procs(run)
            if not left:
                _remove_if_empty(run)
            elif all(pid != "0" and _same_namespace(pid) for pid in left):
                _clear_ours(run, notes)
    return notes


def _same_namespace(pid: str) -> bool:
    try:
        return _pid_namespace(pid) == _pid_namespace()
    except OSError:
        return False


def _clear_ours(folder: Path, notes: list[str]) -> None:
    """A run cgroup of this namespace: left alone while its launcher lives, else what is left in it
    is killed and it is removed."""
    pid = folder.name.removeprefix("run-")
    if pid.isdigit() and _launcher_alive(int(pid)):
        return
    left = _procs(folder)
    if left:
        notes.append(f"killed {len(left)} process(es) left by an earlier run that was interrupted ({folder})")
    if not _remove(folder):
        notes.append(f"cannot remove {folder}: processes in it outlive SIGKILL")


def tree_peak_unavailable() -> str | None:
    reason = run_cgroup_parent()[1]
    return f"tree peak memory not measured: {reason}" if reason else None
