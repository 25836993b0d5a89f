"""The quick look at IPC (`benchlab ipc`): the probe's IPC workloads run
directly, one probe process per mechanism, and binder's absence explained.

Experiments use the same workloads (`ipc.<mechanism>.throughput|latency`)
through the runner; this module is only the direct path, so it does no
statistics: it returns the probe's own documents.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlab.errors import SpecError, WorkloadFailed
from benchlab.locate import probe_path

MECHANISMS = ("pipe", "unix", "seqpacket", "eventfd", "futex")


def mechanisms(chosen: list[str]) -> list[str]:
    """The mechanisms asked for, in the catalogue's order; `all` or nothing means every one."""
    if not chosen or "all" in chosen:
        return list(MECHANISMS)
    unknown = [m for m in chosen if m not in MECHANISMS and m != "binder"]
    if unknown:
        raise SpecError(f"no IPC mechanism '{unknown[0]}' (there are: {', '.join(MECHANISMS)}, binder, all)")
    return [m for m in MECHANISMS if m in chosen]


def binder_status(dev: Path = Path("/dev"), filesystems: Path = Path("/proc/filesystems")) -> str:
    """Why binder is not among the mechanisms measured here."""
    devices = [str(p) for p in (dev / "binder", dev / "hwbinder", dev / "binderfs" / "binder") if p.exists()]
    try:
        binderfs = any(line.split()[-1] == "binder" for line in filesystems.read_text().splitlines() if line.strip())
    except OSError:
        binderfs = False
    if not devices and not binderfs:
        return (
            "binder skipped: this kernel offers no binder device (/dev/binder, /dev/binderfs/binder) "
            "and no binderfs in /proc/filesystems (it was built without CONFIG_ANDROID_BINDER_IPC)"
        )
    where = ", ".join(devices) or "binderfs in /proc/filesystems"
    return f"binder skipped: the kernel offers binder ({where}), but benchlab has no binder transport yet"


@dataclass
class ProbeOutput:
    document: dict[str, Any]
    messages: list[str]  # the probe's stderr lines: notes, verbose lines, the inheritance finding


def run_probe(workload: str, options: Mapping[str, object], fmt: str) -> ProbeOutput:
    """One direct probe run; a failure becomes one line naming what the probe said."""
    argv = [probe_path(), workload]
    for key, value in options.items():
        argv += [f"--{key}", str(int(value) if isinstance(value, bool) else value)]
    proc = subprocess.run([*argv, "--format", fmt], capture_output=True, text=True, check=False)
    messages = proc.stderr.splitlines()
    if proc.returncode != 0:
        said = next((m for m in reversed(messages) if m.startswith("benchlab-probe ")), messages[-1] if messages else "")
        raise WorkloadFailed(said.removeprefix(f"benchlab-probe {workload}: ") or f"{workload} failed (exit {proc.returncode})")
    try:
        return ProbeOutput(json.loads(proc.stdout), messages)
    except json.JSONDecodeError as exc:
        raise WorkloadFailed(f"{workload} printed no JSON: {exc}") from None
