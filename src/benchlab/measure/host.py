"""The machine's fingerprint: what makes timings on it comparable or not.

The fingerprint holds facts that stay put while the machine is up (which
identify its host row: resume and pairing rely on it, see `store.hosts.IDENTITY`)
and the machine state a variant or its setup may change (`machine_state`:
swap, the governor, boost, SMT, huge pages), which each run records in its
details. Readings of a moment such as the load average are reported by
`noise_warnings` instead.
"""

from __future__ import annotations

import os
import platform
import re
import socket
from typing import Any

from benchlab.measure.libraries import LIBRARIES, find_library

_KEPT_OPEN: dict[str, int] = {}  # /proc or /sys path -> a descriptor of it, read again from its start


def _read(path: str) -> str | None:
    """A small /proc or /sys file's text, stripped; None where it cannot be read. Read with the
    bare system calls: a run reads about ten of these (`machine_state`), and a buffered text file
    cost three times as much, a sizeable share of the harness's own time per run. A /proc or /sys
    file read once is kept open and read again from offset 0, which makes the kernel write it
    anew (they are generated as read): opening and closing was a third of each run's reads."""
    fd = _KEPT_OPEN.get(path)
    if fd is not None:
        text = _text(fd)
        if text is not None:
            return text
        os.close(_KEPT_OPEN.pop(path))  # its object is gone (a zram device removed): opened afresh
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    text = _text(fd)
    if text is not None and path.startswith(("/proc/", "/sys/")):
        _KEPT_OPEN[path] = fd
    else:
        os.close(fd)
    return text


def _text(fd: int) -> str | None:
    chunks: list[bytes] = []
    try:
        while chunk := os.pread(fd, 65536, sum(map(len, chunks))):
            chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks).decode().strip()


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in info:
            info[key.strip()] = value.strip()
    return info


def meminfo(key: str, text: str | None = None) -> int | None:
    """A /proc/meminfo figure as the kernel writes it: KiB for sizes, a count for `HugePages_*`;
    from `text` where the caller read the file once for several figures."""
    for line in (text if text is not None else _read("/proc/meminfo") or "").splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return None


def swap_areas() -> dict[str, int]:
    """The swap areas on now, path -> priority; /proc/swaps writes a blank in a path as `\\040`."""
    areas = {}
    for line in (_read("/proc/swaps") or "").splitlines()[1:]:
        fields = line.split()
        if len(fields) == 5:
            areas[re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[0])] = int(fields[4])
    return areas


def _zram_swap() -> dict[str, Any]:
    """The zram device swap is on, where one is: its size and compression algorithm."""
    device = next((os.path.basename(p) for p in swap_areas() if re.fullmatch(r"/dev/zram[0-9]+", p)), None)
    disksize = _read(f"/sys/block/{device}/disksize") if device else None
    return {
        "zram_disksize": int(disksize) if disksize and disksize.isdigit() else None,
        "zram_algorithm": _selected(_read(f"/sys/block/{device}/comp_algorithm")) if device else None,
    }


def _selected(text: str | None) -> str | None:
    if text and "[" in text:
        return text[text.index("[") + 1 : text.index("]")]
    return text


def virtualization(cpuinfo: dict[str, str]) -> str:
    product = _read("/sys/class/dmi/id/product_name") or ""
    vendor = _read("/sys/class/dmi/id/sys_vendor") or ""
    hypervisor = "hypervisor" in cpuinfo.get("flags", "").split()
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return "container"
    if hypervisor or "KVM" in product or "QEMU" in vendor or "VMware" in vendor:
        return f"vm ({vendor or 'unknown'} {product})".strip()
    return "none"


def _boost() -> str | None:
    generic = _read("/sys/devices/system/cpu/cpufreq/boost")
    if generic is not None:
        return "on" if generic == "1" else "off"
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    return None if no_turbo is None else ("off" if no_turbo == "1" else "on")


def machine_state() -> dict[str, Any]:
    """What a variant, its knobs, its `memory` or its setup step may change on this host (a zram
    study turns swap on, takes memory away with huge pages, turns MGLRU off): read for every run
    and stored in its details, never part of the host's identity."""
    siblings = _read("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list") or "0"
    memory = _read("/proc/meminfo") or ""
    return {
        "smt": _read("/sys/devices/system/cpu/smt/active") == "1" or ("," in siblings or "-" in siblings),
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "boost": _boost(),
        "swap_kib": meminfo("SwapTotal", memory),
        **_zram_swap(),
        "hugetlb_pages": meminfo("HugePages_Total", memory),
        "lru_gen": _read("/sys/kernel/mm/lru_gen/enabled"),
        "thp": _selected(_read("/sys/kernel/mm/transparent_hugepage/enabled")),
    }


def fingerprint() -> dict[str, Any]:
    cpu = _cpuinfo()
    return {
        "hostname": socket.gethostname(),
        "machine_id": _read("/etc/machine-id"),
        "arch": platform.machine(),
        "cpu_model": cpu.get("model name", platform.processor() or "unknown"),
        "cpus_online": os.cpu_count() or 1,
        "kernel": platform.release(),
        "kernel_cmdline": _read("/proc/cmdline"),
        "memory_kib": meminfo("MemTotal"),
        "virtualization": virtualization(cpu),
        **machine_state(),
        "allocators": sorted(name for name in LIBRARIES if find_library(name)),
        "python": platform.python_version(),
    }


# The same facts read by a POSIX shell on a host reached over ssh, which may have no Python
REMOTE_FINGERPRINT = r"""
r() { cat "$1" 2>/dev/null | head -n 1; }
echo "hostname=$(hostname)"
echo "machine_id=$(r /etc/machine-id)"
echo "arch=$(uname -m)"
echo "cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "cpus_online=$(getconf _NPROCESSORS_ONLN)"
echo "governor=$(r /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor)"
echo "kernel=$(uname -r)"
echo "kernel_cmdline=$(r /proc/cmdline)"
echo "memory_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
echo "swap_kib=$(awk '/^SwapTotal:/ {print $2}' /proc/meminfo)"
echo "virtualization=$(systemd-detect-virt 2>/dev/null)"
echo "thp=$(r /sys/kernel/mm/transparent_hugepage/enabled)"
"""
_REMOTE_NUMBERS = ("cpus_online", "memory_kib", "swap_kib")


def parse_remote_fingerprint(text: str) -> dict[str, Any]:
    """REMOTE_FINGERPRINT's output as a fingerprint with the local one's keys (empty = unknown)."""
    fp: dict[str, Any] = {"remote": True}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fp[key] = (int(value) if value.isdigit() else None) if key in _REMOTE_NUMBERS else (value or None)
    fp["thp"] = _selected(fp.get("thp"))
    return fp


EMULATED = "emulated (qemu TCG): counters meaningful, times not comparable with native"


def noise_warnings(fp: dict[str, Any], *, live: bool = True) -> list[tuple[str, str]]:
    """(warning, fix) pairs for things that make timings on this machine noisier;
    `live` adds readings of this moment (load), which a stored fingerprint lacks."""
    warnings = []
    load = os.getloadavg()[0]
    fp = {key: fp.get(key) for key in ("cpus_online", "governor", "boost", "virtualization", "smt", "thp", "emulated")}
    if fp["emulated"]:
        warnings.append((EMULATED, "use KVM where it works"))
    if live and load > 0.3 * (fp["cpus_online"] or 1):
        warnings.append((f"load average is {load:.2f} on {fp['cpus_online']} CPUs", "stop other work before measuring"))
    if fp["governor"] not in (None, "performance"):
        warnings.append((f"CPU frequency governor is '{fp['governor']}'", "cpupower frequency-set -g performance"))
    if fp["boost"] == "on":
        warnings.append(("CPU boost is on: clocks vary with temperature", "disable turbo/boost in sysfs or firmware"))
    if fp["virtualization"] not in (None, "none"):
        warnings.append(
            (f"running under virtualisation: {fp['virtualization']}", "compare only runs from the same VM, as ratios")
        )
    if fp["smt"]:
        warnings.append(
            (
                "SMT is on: sibling threads share a core",
                "pin workloads with cpus=, or echo off > /sys/devices/system/cpu/smt/control",
            )
        )
    if fp["thp"] == "always":
        warnings.append(
            (
                "transparent huge pages are 'always': page-fault costs vary",
                "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
            )
        )
    return warnings
