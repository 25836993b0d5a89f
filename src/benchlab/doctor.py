"""What this machine offers an experiment, and what will make its timings noisy; each finding with its fix."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchlab.errors import BenchlabError
from benchlab.ipc import binder_status
from benchlab.measure import programs
from benchlab.measure.cgroup import run_cgroup_parent
from benchlab.measure.host import fingerprint, noise_warnings
from benchlab.measure.libraries import LIBRARIES, find_library
from benchlab.measure.process import Launch, LocalExecutor
from benchlab.variants import kernels
from benchlab.variants.environment import default_rootfs


@dataclass(frozen=True)
class Finding:
    topic: str
    ok: bool
    detail: str
    fix: str = ""


def _can_fifo() -> bool:
    """Tries SCHED_FIFO on a short-lived child, the way a workload would ask for it."""
    code = "import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))"
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _perf_counters() -> tuple[bool, str]:
    """Asks the launcher to count `true` with hardware counters, exactly as a suite run would."""
    try:
        usage = LocalExecutor().run(Launch(argv=("true",), env=dict(os.environ), timeout=30, perf_counters=True)).usage
    except BenchlabError as exc:
        return False, f"the launcher failed: {exc}"
    if usage.counters_note:
        return False, usage.counters_note
    return True, "hardware counters available (IPC, branch and cache miss rates)"


def program_findings(which: programs.Which | None = None, static: Callable[[str], bool] = programs.is_static) -> list[Finding]:
    """A line per program a feature runs (vm guests, containers, ssh, sys.build, the fleet's
    servers, the browser tests, bench/): where it is, or why it is wanted and the package."""
    out = []
    for program in programs.PROGRAMS:
        why = programs.missing(program, which, static)
        detail = programs.find(program, which) if why is None else f"{why} ({program.why})"
        out.append(Finding(f"{program.feature} {program.name}", why is None, detail or "", f"apt-get install {program.package}"))
    return out


def guest_findings(kvm: str = "/dev/kvm", apt_get: str | None = None) -> list[Finding]:
    """What a vm boots (a kernel, cached or to fetch with apt) and how fast: KVM or emulation."""
    cached = kernels.cached_kernels()
    fetcher = apt_get or shutil.which("apt-get")
    if cached:
        kernel = Finding("vm kernel", True, ", ".join(k.source for k in cached) + " in the cache")
    else:
        kernel = Finding("vm kernel", fetcher is not None, "none cached: the first vm run fetches Debian's with apt"
                         if fetcher else "none cached, and no apt-get to fetch Debian's",
                         'benchlab vm fetch, or give the vm a kernel image (kernel = "/boot/vmlinuz-...")')  # fmt: skip
    usable = os.access(kvm, os.R_OK | os.W_OK)
    accel = Finding("vm kvm", usable, f"{kvm} usable: accel = \"auto\" runs guests under KVM" if usable else
                    f"no usable {kvm}: guests are emulated (TCG), ~10-60x slower, times comparable only between guests",
                    "enable virtualisation (nested KVM where this is a VM); else keep accel = \"tcg\"")  # fmt: skip
    return [kernel, accel]


def findings() -> tuple[dict[str, Any], list[Finding]]:
    fp = fingerprint()
    out = [Finding("root", os.geteuid() == 0, "running as root" if os.geteuid() == 0 else "not root",
                   "knobs, SCHED_FIFO and cgroup limits need root: run as root")]  # fmt: skip
    for name, lib in LIBRARIES.items():
        path = find_library(name)
        out.append(
            Finding(f"allocator {name}", path is not None, path or "not installed", f"apt-get install {lib.debian_package}")
        )
    fifo = _can_fifo()
    out.append(Finding("SCHED_FIFO", fifo, "real-time scheduling allowed" if fifo else
                       "not allowed: ipc.*.latency runs its SCHED_OTHER half only",
                       "run as root or grant CAP_SYS_NICE / raise RLIMIT_RTPRIO"))  # fmt: skip
    binder_missing = binder_status()
    out.append(Finding("binder", binder_missing is None, binder_missing or "a binder device (ipc.binder.*)",
                       "without it IPC is measured over pipes, sockets, eventfd and futexes"))  # fmt: skip
    parent, why = run_cgroup_parent()
    out.append(Finding("cgroups", parent is not None, f"a cgroup per run under {parent} (tree peak memory, container limits)"
                       if parent else why or "", "run as root with cgroup v1 memory or cgroup v2 mounted"))  # fmt: skip
    rootfs = default_rootfs()
    built = (rootfs / "bin" / "sh").exists()
    out.append(Finding("container", built, f"root filesystem at {rootfs}" if built else "no root filesystem built",
                       "benchlab container build (needs mmdebstrap)"))  # fmt: skip
    tracefs = os.path.exists("/sys/kernel/tracing/trace_marker") or os.path.exists("/sys/kernel/debug/tracing/trace_marker")
    traced = "mounted (ipc.*.latency --trace)" if tracefs else "not mounted (ipc.*.latency --trace needs it)"
    out.append(Finding("tracefs", tracefs, traced, "mount -t tracefs nodev /sys/kernel/tracing"))
    perf_ok, perf_detail = _perf_counters()
    no_counters = "none on this (virtual) CPU: hardware characteristics are skipped; software counters still work"
    out.append(Finding("perf counters", perf_ok, perf_detail, no_counters))
    out.extend(program_findings())
    out.extend(guest_findings())
    for text, fix in noise_warnings(fp):
        out.append(Finding("noise", False, text, fix))
    return fp, out
