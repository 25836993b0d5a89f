"""The `memory` field: memory pressure and swap as machine state, set before each run.

At a run's start, in this order: swap (every swap area on is turned off; for a zram size, a free
zram device, hot-added where there is none, becomes the only swap), then the reclaim knobs (vm
sysctls, MGLRU) through the ordinary knob path, then the ballast: a hugetlb reservation leaving
about `free` bytes of MemAvailable (what fragmented memory denies it taken on a ramfs), taken last
so that it is measured with zram in place. Huge
pages rather than a memory cgroup's limit on purpose: a cgroup at its limit reclaims by itself,
bypassing kswapd and the global reclaim counters a reclaim study reads. Every change is
journalled before it is made (`KnobJournal`), so the run's end, Ctrl-C, or `benchlab restore`
after a `kill -9` undoes it, last first.

In a vm the same field becomes the guest's own boot settings (`guest_environment`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass

from benchlab import interrupts
from benchlab.errors import EnvironmentProblem, SpecError
from benchlab.measure.host import meminfo, swap_areas
from benchlab.spec.models import DEFAULT_VM_MEMORY, EnvironmentSpec, MemorySpec, VariantSpec
from benchlab.variants.ballast import RamfsBallast
from benchlab.variants.knobs import KnobJournal, read_knob, validate_knob_path
from benchlab.variants.swap import ZRAM_CONTROL, SwapOff, Zram, free_zram, hot_add_zram, zram_algorithms, zram_devices

NR_HUGEPAGES = "/proc/sys/vm/nr_hugepages"
COMPACT_MEMORY = "/proc/sys/vm/compact_memory"
DROP_CACHES = "/proc/sys/vm/drop_caches"
LRU_GEN = "/sys/kernel/mm/lru_gen"
NO_MGLRU = f"this kernel has no MGLRU ({LRU_GEN}): run it in a vm guest whose kernel has CONFIG_LRU_GEN"
SWAP_TOOLS = ("mkswap", "swapon", "swapoff")
GUEST_ZRAM = "zram0"  # the device `modprobe zram` makes in a guest
# the field's knobs: field -> the file it is written to, in the kernel here or a guest's
KNOBS = {
    "swappiness": "/proc/sys/vm/swappiness",
    "min_free_kbytes": "/proc/sys/vm/min_free_kbytes",
    "watermark_scale_factor": "/proc/sys/vm/watermark_scale_factor",
    "lru_gen": f"{LRU_GEN}/enabled",
    "lru_gen_min_ttl_ms": f"{LRU_GEN}/min_ttl_ms",
}


def _knobs(spec: MemorySpec) -> dict[str, tuple[str, str]]:
    """field -> (path, value) of the knobs the spec sets."""
    values = {name: getattr(spec, name) for name in KNOBS}
    return {name: (KNOBS[name], str(value)) for name, value in values.items() if value is not None}


def _bytes(key: str) -> int:
    kib = meminfo(key)
    if kib is None:
        raise EnvironmentProblem(f"/proc/meminfo has no {key}")
    return kib << 10


@dataclass(frozen=True)
class PreparedMemory:
    """The field checked against this machine: what each run's start changes."""

    spec: MemorySpec
    where: str  # the field's place, for what goes wrong at a run's start
    knobs: dict[str, str]

    @classmethod
    def prepare(cls, spec: MemorySpec, where: str) -> PreparedMemory:
        """Refuses, before anything runs, what this machine cannot do: MGLRU it lacks, an
        algorithm its zram lacks, a ballast without hugetlb or with nothing to take."""
        if (spec.lru_gen, spec.lru_gen_min_ttl_ms) != (None, None) and not os.path.isdir(LRU_GEN):
            raise SpecError(NO_MGLRU, where=f"{where}.{'lru_gen' if spec.lru_gen is not None else 'lru_gen_min_ttl_ms'}")
        knobs = {validate_knob_path(path, f"{where}.{name}"): value for name, (path, value) in _knobs(spec).items()}
        if spec.zram is not None:
            _check_swap(spec, where)
        if spec.free is not None:
            _check_ballast(spec.free, f"{where}.free")
        return cls(spec, where, knobs)

    def set_swap(self, journal: KnobJournal) -> None:
        """Every swap area off; for a zram size, a free zram device of that size the only swap."""
        if self.spec.zram is None:
            return
        for device, priority in swap_areas().items():
            off = SwapOff(device, priority)
            journal.change(off.entry(), off.make)
        size = self.spec.zram_bytes(self._effective_ram())
        if size is None:
            return
        # hot_add names its device only as it makes it: such a device is journalled just after, still
        # empty (no size, no memory), and before anything is set on it, with no signal in between
        with interrupts.deferred():
            free = free_zram()
            device = free or hot_add_zram()
            zram = Zram(device, added=free is None, algorithm=zram_algorithms(device)[1])
            journal.change(zram.entry(), lambda: zram.make_swap(size, self.spec.zram_algorithm))

    def _effective_ram(self) -> int:
        """MemTotal less the ballast this run is about to take: what a share of RAM is of."""
        ballast = max(0, _bytes("MemAvailable") - self.spec.free) if self.spec.free is not None else 0
        return _bytes("MemTotal") - ballast

    def take_ballast(self, journal: KnobJournal) -> None:
        """Huge pages reserved until about `free` bytes of MemAvailable remain. A reservation of
        nearly all memory finds too few free 2 MiB blocks once a machine has run for a while
        (measured here: 11,223 of 11,402 pages; after a full test suite 11,009 of 11,156 even
        with compaction), so memory is compacted before the first try, and before the second
        the kernel's clean caches are dropped too (the unmovable slab of dentries and inodes is
        what compaction cannot move). What is still missing is taken in 4 KiB pages on a ramfs
        (`variants/ballast.py`), so every run starts with the same memory free."""
        free = self.spec.free
        if free is None:
            return
        available = _bytes("MemAvailable")
        page = _bytes("Hugepagesize")
        pages = (available - free) // page
        if pages <= 0:
            raise EnvironmentProblem(
                f"{self.where}.free: {available >> 20} MiB are available at this run's start, "
                f"not more than the {free >> 20} MiB to leave: no ballast to take"
            )
        asked = int(read_knob(NR_HUGEPAGES)) + pages
        for attempt in range(2):
            _compact(drop_caches=attempt > 0)
            journal.apply({NR_HUGEPAGES: str(asked)})
            reserved = meminfo("HugePages_Total") or 0
            if reserved >= asked:
                return
        rest = RamfsBallast.new()
        journal.change(rest.entry(), lambda: rest.make((asked - reserved) * page))


def _compact(*, drop_caches: bool) -> None:
    """Asks the kernel to compact memory, first dropping its clean page cache and reclaimable
    slab where asked (triggers, not knobs: nothing to put back; the ballast would reclaim the
    cache anyway); a kernel without compaction just has the reservation try on fragmented memory."""
    if drop_caches:
        os.sync()
        with contextlib.suppress(OSError), open(DROP_CACHES, "w") as f:
            f.write("3")
    with contextlib.suppress(OSError), open(COMPACT_MEMORY, "w") as f:
        f.write("1")


def _check_swap(spec: MemorySpec, where: str) -> None:
    if os.geteuid() != 0:
        raise EnvironmentProblem(f"{where}.zram: swap is root's to change", hint="run benchlab as root")
    missing = [tool for tool in SWAP_TOOLS if shutil.which(tool) is None]
    if missing:
        raise EnvironmentProblem(f"{where}.zram needs {', '.join(missing)}", hint="apt-get install util-linux mount")
    if spec.zram == "off":
        return
    devices = zram_devices()
    if not devices and not ZRAM_CONTROL.is_dir():
        raise EnvironmentProblem(f"{where}.zram: this kernel has no zram", hint="modprobe zram")
    if spec.zram_algorithm is not None and devices:
        offered, _ = zram_algorithms(devices[0])
        if spec.zram_algorithm not in offered:
            raise SpecError(
                f"this kernel's zram has no algorithm {spec.zram_algorithm!r} (it has {', '.join(offered)})",
                where=f"{where}.zram_algorithm",
            )


def _check_ballast(free: int, where: str) -> None:
    if not os.path.exists(NR_HUGEPAGES) or meminfo("Hugepagesize") is None:
        raise EnvironmentProblem(f"{where}: this kernel has no hugetlb pages to take memory away with (CONFIG_HUGETLBFS)")
    validate_knob_path(NR_HUGEPAGES, where)
    available = _bytes("MemAvailable")
    if free >= available:
        raise EnvironmentProblem(f"{where}: {free >> 20} MiB to leave is not below the {available >> 20} MiB available now")


def guest_environment(env: EnvironmentSpec, spec: MemorySpec, where: str) -> EnvironmentSpec:
    """The field as a vm guest's own boot settings: the zram module, its device's algorithm and
    size (a share is of the guest's memory), swap on it, and the knobs, written in the guest."""
    if spec.free is not None:
        raise SpecError(
            "a ballast takes memory from this machine's kernel, not a guest's: size the guest's memory instead "
            "(environment.memory)",
            where=f"{where}.free",
        )
    if spec.zram is not None and env.swap:
        raise SpecError("environment.swap turns a guest's swap on too: give it once", where=f"{where}.zram")
    knobs = {path: value for path, value in _knobs(spec).values()}
    size = spec.zram_bytes(env.memory or DEFAULT_VM_MEMORY)
    if size is not None:
        device = f"/sys/block/{GUEST_ZRAM}"
        algorithm = {f"{device}/comp_algorithm": spec.zram_algorithm} if spec.zram_algorithm else {}
        knobs = {**algorithm, f"{device}/disksize": str(size), **knobs}  # the algorithm first: the size fixes it
    clash = sorted(set(knobs) & set(env.knobs))
    if clash:
        raise SpecError(f"environment.knobs sets {', '.join(clash)}, which memory sets too", where=where)
    modules = ["zram"] if size is not None and "zram" not in env.modules else []
    return env.model_copy(
        update={
            "modules": [*env.modules, *modules],
            "knobs": {**env.knobs, **knobs},
            "swap": [f"/dev/{GUEST_ZRAM}"] if size is not None else env.swap,
        }
    )


def machine_memory(spec: VariantSpec, where: str) -> tuple[PreparedMemory | None, EnvironmentSpec]:
    """Where a variant's `memory` applies: this machine (prepared here) or its vm guest (the
    environment with the guest's settings added). A remote host's is not benchlab's to change."""
    memory, env = spec.memory, spec.environment
    if memory is None:
        return None, env
    where = f"{where}.memory"
    if env.kind == "ssh":
        raise SpecError("memory is set on this machine or in a vm guest; it cannot apply to a remote host", where=where)
    if env.kind == "vm":
        return None, guest_environment(env, memory, where)
    return PreparedMemory.prepare(memory, where), env
