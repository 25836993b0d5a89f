"""The experiment spec as validated models.

Every field a user can write lives here, with its default and bounds, so a
spec is checked whole before anything runs and an error can name its place
(`variants[1].allocator`). Checks that need the machine (is the binary
there, is the library installed) happen later, in `resolve`.
"""

from __future__ import annotations

import math
import posixpath
import re
import shlex
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from benchlab.spec.fields import NAME_MAX, Arg, Finite, Label, Line, Name

# bounds that keep one spec from exhausting the machine before anything runs (documented in the README)
MAX_VARIANTS = 256
MAX_WORKLOADS = 256
MAX_PAIRS = 4096  # workloads x variants: each pair is a series of runs
MAX_ITEMS = 4096  # arguments of one command, entries of one table
MAX_CPU = 8192  # the kernel's largest NR_CPUS
MAX_SEED = 2**63 - 1  # what the planner's RNG and the database's integers hold
MAX_TIMEOUT = 7 * 86400.0  # a week: a run that long is a typo, not a benchmark
Word = Annotated[Arg, Field(min_length=1)]  # a path, a program: never empty
Args = Annotated[list[Arg], Field(max_length=MAX_ITEMS)]  # a command line
MIN_TIMEOUT = 0.01  # seconds: below this no process even starts, so every run would time out
Seconds = Annotated[Finite, Field(ge=MIN_TIMEOUT, le=MAX_TIMEOUT)]
Scalar = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)] | Finite | bool | Arg

MAX_COUNTERS = 16  # events perf stat counts in one profiled run
# a perf event as `perf stat -e` takes it (`cycles:u`, `cpu/event=0x3c,umask=0x0/`, `sched:sched_switch`):
# never an option, never a space
PerfEvent = Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.:/=,@-]*$", max_length=200)]
Direction = Literal["lower", "higher", "none"]
Correction = Literal["bh", "holm", "none"]
Allocator = Literal["glibc", "jemalloc", "tcmalloc", "mimalloc"]


class Strict(BaseModel):
    """Unknown keys are errors: a misspelt key must never be silently ignored.
    Strict types too: `blocks = "10"` or `warmup = true` is a mistake to report, not to coerce."""

    # a field's docstring is its description in the generated spec reference (docs/spec.md), which reads
    # it itself (`spec/reference.py`): pydantic's `use_attribute_docstrings` would read every model's
    # source as the module loads, 75 ms of CPU for every command that reads a spec
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class MetricSettings(Strict):
    """Per-metric overrides: a direction for counters that lack one (memory, faults and
    context switches are not judged without one), the family it is corrected in, a tighter
    or looser margin."""

    direction: Direction | None = None
    """Which way is better: `lower`, `higher`, or `none` (shown, never judged)."""
    family: Literal["primary", "secondary"] | None = None
    """The family the metric is corrected in (see docs/statistics.md); default: by its kind."""
    margin: Annotated[Finite, Field(gt=0, lt=1)] | None = None
    """This metric's equivalence margin for "same", instead of the experiment's."""


_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?) ?(?:([KMGT])i?B?|B?)", re.IGNORECASE)


def parse_size(value: object) -> object:
    """Bytes from 1073741824, "1G", "512MiB", "1.5G" or "64k" (powers of 1024), in whole bytes."""
    if isinstance(value, str):
        found = _SIZE.fullmatch(value)
        if not found:
            raise ValueError(f"{value[:40]!r} is not a size such as 512M or 2G")
        size = float(found[1]) * 1024 ** ("KMGT".find(found[2].upper()) + 1 if found[2] else 0)
        if size != int(size):
            raise ValueError(f"{value!r} is not a whole number of bytes")
        return int(size)
    return value


class ProfileSpec(Strict):
    """Profiled runs: in every block, after its timed runs, one more run per variant under
    `perf record` (the whole process tree, user and kernel stacks). They are stored apart and
    never used as samples of the workload's metrics; `benchlab explain` judges where the time
    went. Written `true` for the defaults, `false` to turn off an experiment-wide profile for
    one workload, or as this table."""

    enabled: bool = True
    """Whether the workload is profiled (`profile = false` opts one workload out)."""
    frequency: Annotated[int, Field(ge=1, le=100_000)] = 999
    """Samples per second of CPU time per thread (a fixed period, so each sample weighs the same)."""
    scope: Literal["tree", "system"] | None = None
    """What is sampled: the workload's process tree, or the whole system while it runs (its kernel
    threads too: kswapd's reclaim). Default: the tree on this machine, the whole guest in a `vm`
    guest (where nothing else runs)."""
    call_graph: Literal["fp", "dwarf"] = "fp"
    """How stacks are walked: frame pointers (cheap; programs built without them show short
    stacks), or DWARF unwinding of a copy of each sample's stack (costly, large)."""
    max_size: Annotated[int, Field(ge=1 << 20, le=1 << 40)] = 256 << 20
    """The most perf data one profiled run may write (`"256M"`): past it the profile is cut short
    and marked so."""
    off_cpu: bool = False
    """Also record where the workload waits off the CPU (blocked on a pipe, I/O, a lock, a child;
    or runnable but preempted): every switch of its threads out and back in (`sched:sched_switch`
    and perf's switch events), each wait's time given to the stack it switched out at, judged
    like CPU time in a family of its own. Each switch costs a sample: heavy for workloads that
    switch hundreds of thousands of times a second."""
    counters: Annotated[list[PerfEvent], Field(max_length=MAX_COUNTERS)] | None = None
    """Events `perf stat` counts over each profiled run's process tree (the whole system with
    `scope = "system"`), as perf names them: hardware (`instructions`, `cache-misses`) or software
    (`page-faults`, `context-switches`). Default: `cycles`, `instructions`, `cache-misses` and
    `branch-misses` where the machine has hardware counters, none where it has not; `[]` counts none."""

    _size = field_validator("max_size", mode="before")(parse_size)

    @model_validator(mode="before")
    @classmethod
    def _from_flag(cls, value: object) -> object:
        return {"enabled": value} if isinstance(value, bool) else value


def _split_command(value: object) -> object:
    return shlex.split(value) if isinstance(value, str) else value


class WorkloadSpec(Strict):
    """One workload: exactly one of `builtin`, `gbench` or `command`."""

    name: Name
    """The workload's name in reports."""
    builtin: Name | None = None
    """A built-in workload of `benchlab-probe` (`benchlab workloads` lists them), e.g. `alloc.churn`."""
    gbench: Word | None = None
    """A Google Benchmark binary, run with `--benchmark_format=json`."""
    command: Args | None = None
    """A command timed as a whole process tree: a list of arguments, or a string split as a shell would."""
    options: Annotated[dict[Name, Scalar], Field(max_length=MAX_ITEMS)] = {}
    """A built-in's options (`{ threads = 2 }`), checked against the types and ranges the probe declares."""
    args: Args = []
    """Extra arguments of a `gbench` or `command` workload."""
    cwd: Word | None = None
    """The folder the workload and its steps run in."""
    timeout: Seconds | None = None
    """Seconds before a run of this workload is killed (default: the experiment's `timeout`)."""
    metrics: Annotated[dict[Label, MetricSettings], Field(max_length=MAX_ITEMS)] = {}
    """Per-metric settings by metric name (`{ tree_peak = { direction = "lower" } }`)."""
    # Off by default: they cost a run about a millisecond, and a virtualised PMU slows every
    # exec and context switch of the counted process (the CPU suite turns them on)
    perf_counters: bool = False
    """Count perf events over the run's process tree: task clock, migrations, and IPC and miss
    rates where the machine has a PMU (shown, not judged)."""
    # off by default: each sample briefly takes the process's memory-map lock
    memory_interval: Annotated[Finite, Field(ge=0.001, le=3600)] | None = None
    """Seconds between samples of the tree's RSS and PSS (smaps_rollup): `rss_mean`, `pss_mean`,
    `pss_peak`, for workloads whose footprint over time matters (an allocator's decay)."""
    setup: Args | None = None
    """An untimed step run once per variant before its first run (`./configure`), in `cwd` with the
    variant's environment."""
    clean: Args | None = None
    """An untimed step run before every run (`make clean`), in `cwd` with the variant's environment."""
    profile: ProfileSpec | None = None
    """Profiled runs of this workload (`true`, `false` or a table; default: the experiment's `profile`)."""

    _split = field_validator("command", "setup", "clean", mode="before")(_split_command)

    @field_validator("command", "setup", "clean")
    @classmethod
    def _non_empty(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not (value and value[0]):
            raise ValueError("the command is empty")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> WorkloadSpec:
        kinds = [k for k in ("builtin", "gbench", "command") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("give exactly one of builtin, gbench or command")
        if self.options and self.builtin is None:
            raise ValueError("options apply to builtin workloads only (use args for the others)")
        if self.args and self.builtin is not None:
            raise ValueError("args apply to gbench and command workloads; a builtin takes options = { NAME = VALUE }")
        return self

    @property
    def kind(self) -> str:
        return "builtin" if self.builtin else "gbench" if self.gbench else "command"


_CPU_RANGE = re.compile(r"[0-9]+(-[0-9]+)?")  # ASCII digits only: "٠" is no CPU number


def parse_cpu_list(text: str) -> list[int]:
    """Parses the kernel's cpu-list syntax ("0-3,6", spaces after commas allowed) as taskset and
    cpusets write it; anything else is refused whole, never read as a part of itself."""
    if len(text) > MAX_ITEMS:
        raise ValueError(f"a CPU list of {len(text)} characters; at most {MAX_ITEMS}")
    cpus: set[int] = set()
    for part in (p.strip(" ") for p in text.split(",")):
        if not _CPU_RANGE.fullmatch(part):
            raise ValueError(f"'{text[:40]}' is not a CPU list such as 0-3,6")
        lo, _, hi = part.partition("-")
        if len(lo) > 5 or len(hi) > 5 or int(hi or lo) >= MAX_CPU:  # bounded before a range is built
            raise ValueError(f"'{part}' names a CPU beyond {MAX_CPU - 1}, the kernel's largest")
        first, last = int(lo), int(hi or lo)
        if last < first:
            raise ValueError(f"'{part}' is a descending range")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


KNOB_ROOTS = ("/proc/sys/", "/sys/")


def knob_spelling_problem(path: str) -> str | None:
    """Why `path` is no knob by its spelling, or None: one rule for specs, bundles and `restore`,
    which trust a journal no more than a spec."""
    if "\0" in path or not path.startswith("/") or ".." in path.split("/"):
        return "must be an absolute path without '..'"
    if posixpath.normpath(path) != path:
        return f"is written {posixpath.normpath(path)!r} (one spelling per knob)"
    if not path.startswith(KNOB_ROOTS):
        return "is not under /proc/sys or /sys"
    return None


def _finite_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


class ShimSpec(Strict):
    """benchlab's allocator shim, preloaded ahead of the allocator: one free in `sampling` per
    thread is quarantined and pattern-checked (0 = installed, doing nothing else)."""

    sampling: Annotated[int, Field(ge=0, le=2**62)] = 0
    """One free in N per thread is sampled; 0: installed, doing nothing else."""
    scope: Annotated[Line, Field(min_length=1, pattern=r"^[^=]+$")] | None = None
    """A shell pattern on the program name (`sort`, `cc*`): the shim is a no-op in every other process."""
    quarantine: Annotated[int, Field(ge=1, le=65536)] = 1024
    """Sampled blocks parked at most."""
    quarantine_kib: Annotated[int, Field(ge=0, le=2**30)] = 16384
    """Bytes parked at most, in KiB."""


DEFAULT_VM_MEMORY = 1 << 30
DEFAULT_VM_CPUS = 2
DEFAULT_KVM_BOOT_TIMEOUT = 30.0


class BalloonSpec(Strict):
    """vm: a virtio memory balloon, how a hypervisor takes memory back from a guest. Written as
    text: `"none"`, `"reporting"`, a target size (`"768M"`), or this table."""

    reporting: bool = False
    """Free page reporting: the guest hands the pages it frees back to the host as it frees them
    (the responsive policy)."""
    target: Annotated[int, Field(ge=4 << 20, le=1 << 50)] | None = None
    """After boot the host asks the guest to shrink to this size (the balloon inflates to take the
    rest), and waits until it has; a size such as `"768M"`."""

    _size = field_validator("target", mode="before")(parse_size)

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: object) -> object:
        if value == "reporting":
            return {"reporting": True}
        if isinstance(value, str | int) and not isinstance(value, bool):
            return {"target": value}
        return value


# [user@]host: a word ssh cannot take for one of its options (a leading '-' would be `-oProxyCommand=...`)
_SSH_HOST = r"([\w][\w.-]*@)?([\w][\w.-]*|\[[0-9A-Fa-f:]+\])"


class EnvironmentSpec(Strict):
    """Where a variant runs: `local` (this system), `container` (new mount, PID, network and UTS
    namespaces and a chroot into a Debian root filesystem, with optional cgroup limits), `ssh`
    (another host: the probe is copied there, results come back here), or `vm` (a virtual machine
    booting a kernel of your choice, with this system's files read-only as its root)."""

    kind: Literal["local", "container", "ssh", "vm"] = "local"
    """Where the runs happen. The whole table may be written as text: `"local"`, `"container"`,
    `"vm"` or `"ssh://user@host:port"`."""
    rootfs: Word | None = None
    """container: the root filesystem (default: the one `benchlab container build` made)."""
    # the kernel's smallest quota is 1 ms a 100 ms period
    cpus: Annotated[Finite, Field(ge=0.01, le=4096)] | None = None
    """container: CPU limit (a cgroup quota), in CPUs. vm: virtual CPUs (a whole number; default 2)."""
    memory: Annotated[int, Field(ge=4 << 20, le=1 << 50)] | None = None
    """container: memory limit in bytes; vm: the guest's memory (default 1 GiB). A size such as
    `"2G"` or `"512MiB"` is accepted."""
    kernel: Word | None = None
    """vm: the guest kernel: a Debian kernel package (`linux-image-6.1.0-56-amd64`) or its version
    (`6.1.0-56`), fetched with apt into benchlab's cache, or a path to a kernel image
    `DIR/boot/vmlinuz-RELEASE` whose modules are in `DIR/lib/modules/RELEASE` (the layout of an
    extracted package). Default: the kernel Debian's `linux-image-amd64` depends on."""
    accel: Literal["auto", "kvm", "tcg"] = "auto"
    """vm: `kvm` (hardware virtualisation), `tcg` (emulation: counters meaningful, times not
    comparable with native), or `auto`: KVM where a guest boots under it, else TCG."""
    modules: Annotated[list[Name], Field(max_length=MAX_ITEMS)] = []
    """vm: kernel modules loaded in the guest at boot, in this order (with their dependencies),
    e.g. `["binder_linux", "zram"]`."""
    knobs: Annotated[dict[Line, Line], Field(max_length=MAX_ITEMS)] = {}
    """vm: sysfs and procfs values written inside the guest at boot, e.g.
    `{"/sys/kernel/mm/lru_gen/enabled" = "y"}`."""
    swap: Annotated[list[Annotated[Word, Field(pattern=r"^/")]], Field(max_length=16)] = []
    """vm: block devices made swap space in the guest (`mkswap`, `swapon`) after its knobs are
    written: `["/dev/zram0"]` with knobs `/sys/block/zram0/comp_algorithm` and `disksize` first
    is zram swap of a given algorithm and size."""
    disk: Annotated[int, Field(ge=16 << 20, le=1 << 44)] | None = None
    """vm: a virtio data disk of this size (`"256M"`) with a new ext4 filesystem, mounted in the
    guest at `/var/benchlab/disk` before its knobs are written: files there have a block device
    behind them, so the guest's page cache can evict them (unlike the shared root's)."""
    cmdline: Line | None = None
    """vm: extra kernel command line."""
    fresh: bool = False
    """vm: boot a new guest before every run (cold-state studies); otherwise one guest serves
    all of the variant's runs."""
    kvm_boot_timeout: Annotated[Finite, Field(ge=1, le=600)] = DEFAULT_KVM_BOOT_TIMEOUT
    """vm: seconds a boot under KVM may take before it counts as hung (then, under `auto`, the
    guest boots under TCG). A kernel boots under KVM in a few seconds where KVM works."""
    balloon: BalloonSpec | None = None
    """vm: a memory balloon (default none): `"reporting"` (free page reporting), a target size
    such as `"768M"`, or `{ reporting = true, target = "768M" }`."""
    host: Line | None = None
    """ssh: `[user@]host`."""
    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    """ssh: the port."""
    ssh_options: Args = []
    """ssh: extra options, e.g. `["-i", "~/.ssh/lab", "-o", "StrictHostKeyChecking=no"]`."""

    _size = field_validator("memory", "disk", mode="before")(parse_size)

    @field_validator("balloon", mode="before")
    @classmethod
    def _no_balloon(cls, value: object) -> object:
        return None if value == "none" else value

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: object) -> object:
        """`"local"`, `"container"` or `"ssh://user@host:port"` as shorthand for the table."""
        if not isinstance(value, str):
            return value
        if value.startswith("ssh://"):
            found = re.fullmatch(r"(.*?)(?::([0-9]+))?/?", value.removeprefix("ssh://"))
            host, port = found.groups() if found else (value, None)
            return {"kind": "ssh", "host": host, **({"port": int(port)} if port else {})}
        return {"kind": value}

    @model_validator(mode="after")
    def _fields_of_kind(self) -> EnvironmentSpec:
        container = (self.rootfs,)
        vm = (self.kernel, self.cmdline, self.modules or None, self.knobs or None, self.fresh or None, self.balloon,
              self.swap or None, self.disk,
              None if self.kvm_boot_timeout == DEFAULT_KVM_BOOT_TIMEOUT else self.kvm_boot_timeout)  # fmt: skip
        ssh = (self.host, self.port, self.ssh_options or None)
        if self.kind not in ("container", "vm") and (self.cpus, self.memory) != (None, None):
            raise ValueError("cpus and memory apply to a container environment or a vm")
        if self.kind != "container" and any(v is not None for v in container):
            raise ValueError("rootfs applies to a container environment")
        if self.kind != "vm" and (any(v is not None for v in vm) or self.accel != "auto"):
            raise ValueError(
                "kernel, accel, modules, knobs, swap, disk, cmdline, fresh, kvm_boot_timeout and balloon "
                "apply to a vm environment"
            )
        if self.balloon and self.balloon.target and self.balloon.target >= (self.memory or DEFAULT_VM_MEMORY):
            raise ValueError("a balloon's target must be below the vm's memory")
        if self.kind == "vm" and self.cpus is not None and self.cpus != int(self.cpus):
            raise ValueError("a vm's cpus is a whole number of virtual CPUs")
        if self.kind != "ssh" and any(v is not None for v in ssh):
            raise ValueError("host, port and ssh_options apply to an ssh environment")
        if self.kind == "ssh" and not (self.host and re.fullmatch(_SSH_HOST, self.host, re.ASCII)):
            raise ValueError("an ssh environment needs a host such as ssh://user@lab-2 (letters, digits, . _ -; no leading -)")
        return self

    @property
    def label(self) -> str:
        return f"ssh://{self.host}" if self.kind == "ssh" else self.kind


_ZRAM_SHARE = re.compile(r"^([0-9]{1,3}(?:\.[0-9]{1,2})?)%$")
MAX_ZRAM_SHARE = 400.0  # percent of RAM: compressed pages make a zram disk larger than RAM worth having, within reason


def _zram_size(value: object) -> object:
    """A size (`"2G"`, bytes), a share of RAM (`"25%"`) or `"off"`: only a size becomes a number."""
    if not isinstance(value, str) or value == "off":
        return value
    share = _ZRAM_SHARE.fullmatch(value)
    if share is None:
        try:
            return parse_size(value)
        except ValueError:
            raise ValueError(f"{value[:40]!r} is not a size such as 2G, a share of RAM such as 25%, or off") from None
    if not 0 < float(share[1]) <= MAX_ZRAM_SHARE:
        raise ValueError(f"{value!r}: a share of RAM above 0% and at most {MAX_ZRAM_SHARE:.0f}%")
    return value


class MemorySpec(Strict):
    """Memory pressure and swap as machine state, set before each run and put back after it
    (journalled, as knobs are): swap, reclaim's knobs, and memory taken away. On this machine it
    needs root; in a vm it becomes the guest's own settings."""

    free: Annotated[int, Field(ge=16 << 20, le=1 << 50)] | None = None
    """Memory left available (`"2G"`): at each run's start a hugetlb reservation takes the rest of
    MemAvailable away, so the whole kernel is under pressure (kswapd, global reclaim). Not in a vm:
    size the guest's memory instead."""
    zram: (
        Annotated[int, Field(ge=4 << 20, le=1 << 50)] | Annotated[str, Field(pattern=_ZRAM_SHARE.pattern)] | Literal["off"] | None
    ) = None
    """zram swap as the only swap during the run: a size (`"2G"`), a share of the RAM left after
    `free` (`"25%"`; in a vm, of the guest's memory), or `"off"` for no swap at all. Swap that was
    on is turned off for the run and back on after it."""
    zram_algorithm: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,31}$")] | None = None
    """The zram device's compression algorithm (`lz4`), one the kernel lists in `comp_algorithm`;
    default: the kernel's."""
    swappiness: Annotated[int, Field(ge=0, le=200)] | None = None
    """`/proc/sys/vm/swappiness`: how readily anonymous memory is swapped rather than page cache dropped."""
    min_free_kbytes: Annotated[int, Field(ge=0, le=2**31 - 1)] | None = None
    """`/proc/sys/vm/min_free_kbytes`: the free memory the kernel keeps in reserve."""
    watermark_scale_factor: Annotated[int, Field(ge=1, le=3000)] | None = None
    """`/proc/sys/vm/watermark_scale_factor`: how early kswapd wakes and how much it frees, in 1/10000 of memory."""
    lru_gen: Annotated[str, Field(pattern=r"^(y|n|0x[0-9a-fA-F]{1,4})$")] | None = None
    """MGLRU, `/sys/kernel/mm/lru_gen/enabled`: `"y"` or `true` (on), `"n"` or `false` (off, the
    classic LRU), or a mask such as `"0x0007"`. Needs a kernel with CONFIG_LRU_GEN."""
    lru_gen_min_ttl_ms: Annotated[int, Field(ge=0, le=2**32 - 1)] | None = None
    """`/sys/kernel/mm/lru_gen/min_ttl_ms`: MGLRU keeps the working set of the last N ms (thrashing prevention)."""

    _size = field_validator("free", mode="before")(parse_size)
    _zram = field_validator("zram", mode="before")(_zram_size)

    @field_validator("lru_gen", mode="before")
    @classmethod
    def _switch(cls, value: object) -> object:
        return {True: "y", False: "n"}.get(value, value) if isinstance(value, bool) else value

    @model_validator(mode="after")
    def _algorithm_of_a_device(self) -> MemorySpec:
        if self.zram_algorithm is not None and self.zram in (None, "off"):
            raise ValueError('zram_algorithm needs a zram size (zram = "2G" or "25%")')
        return self

    def zram_bytes(self, ram: int) -> int | None:
        """The zram disk's size in bytes (whole pages), a share taken of `ram`; None: no zram device."""
        if self.zram is None or self.zram == "off":
            return None
        if isinstance(self.zram, int):
            return self.zram
        return int(ram * float(self.zram.rstrip("%")) / 100) // 4096 * 4096


# an allocator option's name: a word, so it cannot carry MALLOC_CONF's `:` and `,`, GLIBC_TUNABLES's `=`
# and `:`, or anything else into the variable that carries it
TunableName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$", max_length=NAME_MAX)]
# a knob's value: one non-empty line, as one write to a sysfs or procfs file
KnobValue = Annotated[Line, Field(min_length=1)]


class VariantSpec(Strict):
    """One configuration of the system under test; every field is optional."""

    name: Name
    """The variant's name in reports."""
    env: Annotated[dict[str, Arg], Field(max_length=MAX_ITEMS)] = {}
    """Environment variables set for the run (`{ ZSTD_CLEVEL = 1 }`; numbers are written as text)."""
    wrapper: Args = []
    """A command prefix (`"nice -n 10"`): a list, or a string split as a shell would."""
    background: Args = []
    """A load started beside every run and killed after it: a command, or a string split as a shell would."""
    cpus: Annotated[list[Annotated[int, Field(ge=0, lt=MAX_CPU)]], Field(max_length=MAX_CPU)] | None = None
    """The CPUs the run may use: a list, one number, or a CPU list such as `"0-3,6"`."""
    allocator: Allocator | None = None
    """The malloc preloaded for the run (default: glibc's)."""
    tunables: Annotated[dict[TunableName, Scalar], Field(max_length=MAX_ITEMS)] = {}
    """The allocator's options (glibc's when no allocator is named): `dirty_decay_ms`, `narenas`,
    `arena_max`...; checked against the installed version; `"cpus"` stands for the CPUs the variant may use."""
    knobs: Annotated[dict[Line, KnobValue], Field(max_length=MAX_ITEMS)] = {}
    """sysfs/procfs files under /proc/sys or /sys and the value written before each run (journalled,
    put back after it)."""
    shim: ShimSpec | None = None
    """benchlab's allocator shim, preloaded ahead of the allocator."""
    environment: EnvironmentSpec = EnvironmentSpec()
    """Where the runs happen: `"local"`, `"container"`, `"ssh://user@host"`, or a table."""
    memory: MemorySpec | None = None
    """Memory pressure and swap during each run (`{ zram = "25%", free = "2G", lru_gen = "y" }`),
    set before it and put back after it; in a vm, inside the guest."""
    sweep: Annotated[dict[Line, Scalar], Field(max_length=2)] = {}
    """The sweep point this variant stands for (field -> value), written by a `[sweep]` section."""

    _split = field_validator("wrapper", "background", mode="before")(_split_command)

    @field_validator("cpus", mode="before")
    @classmethod
    def _cpus(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            return [value]
        return parse_cpu_list(value) if isinstance(value, str) else value

    @field_validator("cpus")
    @classmethod
    def _cpus_valid(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and (not value or min(value) < 0):
            raise ValueError("give at least one CPU number, none negative")
        return value

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,254}", key):
                raise ValueError(f"{key[:60]!r} is not an environment variable name")
        return value

    @field_validator("knobs")
    @classmethod
    def _knob_paths(cls, value: dict[str, str]) -> dict[str, str]:
        """Where a knob may be, by its spelling alone (whether it exists is checked where it is
        written): one spelling per file, so that one knob cannot be journalled twice."""
        for path in value:
            problem = knob_spelling_problem(path)
            if problem is not None:
                raise ValueError(f"{path[:80]!r} {problem}")
        return value

    @field_validator("env", "knobs", mode="before")
    @classmethod
    def _numbers_as_text(cls, value: object) -> object:
        """`X = 1` in TOML means the text "1" for an environment variable or a sysfs file (a number
        that is not finite stays a number, and is refused as one)."""
        if isinstance(value, dict):
            return {k: str(v) if _finite_number(v) else v for k, v in value.items()}
        return value


MIN_BLOCKS = 2


def _enough_blocks(blocks: int) -> int:
    """Fewer than two blocks leave nothing to pair; the refusal says what to give instead."""
    if blocks < MIN_BLOCKS:
        raise ValueError(
            f"{blocks} block{'' if blocks == 1 else 's'} cannot be judged: every change is estimated from pairs of "
            f"runs, so give at least {MIN_BLOCKS} (3 is the fewest that can decide: `benchlab run SPEC --quick` runs 3)"
        )
    return blocks


# checked by a validator rather than `ge` so that the refusal can say what to do; the schema still says 2
Blocks = Annotated[int, Field(le=100_000, json_schema_extra={"minimum": MIN_BLOCKS}), AfterValidator(_enough_blocks)]


class UntilDecided(Strict):
    """Sequential mode: blocks are added one at a time, from `min_blocks` on, until every primary
    row (the outcomes) is better, worse or same, or `max_blocks` have run (then unclear, never a silent same).
    The thresholds are calibrated for exactly these looks (stats/sequential.py)."""

    min_blocks: Annotated[int, Field(ge=3, le=1000)] = 3
    """The first block after which the experiment is judged."""
    max_blocks: Annotated[int, Field(ge=3, le=1000)] = 40
    """The budget: the last block run if rows stay undecided."""

    @model_validator(mode="after")
    def _ordered(self) -> UntilDecided:
        if self.max_blocks < self.min_blocks:
            raise ValueError(f"max_blocks ({self.max_blocks}) is below min_blocks ({self.min_blocks})")
        return self


class ExperimentSpec(Strict):
    """A whole experiment: what to run, under which variants, how to judge it."""

    name: Name
    """The experiment's name: `benchlab report NAME`, `show`, `export` and `--resume` use it."""
    workloads: Annotated[list[WorkloadSpec], Field(min_length=1, max_length=MAX_WORKLOADS)]
    """What is measured (`[[workloads]]`); a `suite` key adds the CPU suite's."""
    variants: Annotated[list[VariantSpec], Field(min_length=1, max_length=MAX_VARIANTS)]
    """The configurations compared (`[[variants]]`); a `[sweep]` section adds more."""
    baseline: Name | None = None
    """The variant the others are compared with (default: the first)."""
    blocks: Blocks = 10
    """Blocks to run: one block runs every variant of every workload once (`benchlab run --blocks N` overrides it)."""
    warmup: Annotated[int, Field(ge=0, le=1000)] = 0
    """Untimed warm-up rounds before the blocks: stored, never samples."""
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    """Seeds the run order."""
    alpha: Annotated[Finite, Field(gt=0, lt=0.5)] = 0.05
    """The false-verdict rate the experiment's better/worse verdicts are held to."""
    correction: Correction = "bh"
    """How each family of tests is corrected: Benjamini-Hochberg, Holm, or none."""
    margin: Annotated[Finite, Field(gt=0, lt=1)] = 0.01
    """Equivalence margin: a change whose 90% interval lies within +-margin is "same"."""
    timeout: Seconds = 600.0
    """Seconds before a run is killed (a workload's own `timeout` wins)."""
    fit: Literal["value", "reciprocal", "none"] = "none"
    """With a sweep: fit each metric's change against the swept value or its reciprocal (written by `[sweep]`)."""
    profile: ProfileSpec | None = None
    """Profiled runs of every workload (`true` or a table; `benchlab run --profile`): where the time
    went, judged like the metrics (`benchlab explain`)."""
    until_decided: UntilDecided | None = None
    """Sequential mode: add blocks until every primary row is decided (`blocks` is then ignored);
    `true` takes the defaults."""

    @field_validator("until_decided", mode="before")
    @classmethod
    def _flag(cls, value: object) -> object:
        if value is True:
            return {}
        return None if value is False else value

    @model_validator(mode="after")
    def _consistent(self) -> ExperimentSpec:
        pairs = len(self.workloads) * len(self.variants)
        if pairs > MAX_PAIRS:
            raise ValueError(
                f"{len(self.workloads)} workloads x {len(self.variants)} variants make {pairs} series of runs; "
                f"at most {MAX_PAIRS} are allowed"
            )
        for label, items in (("workloads", self.workloads), ("variants", self.variants)):
            seen: set[str] = set()
            for item in items:
                if item.name in seen:
                    raise ValueError(f"two {label} are named '{item.name}'")
                seen.add(item.name)
        if self.baseline is not None and self.baseline not in {v.name for v in self.variants}:
            raise ValueError(f"baseline '{self.baseline}' is not one of the variants")
        return self

    @property
    def baseline_name(self) -> str:
        return self.baseline or self.variants[0].name

    def workload(self, name: str) -> WorkloadSpec:
        return next(w for w in self.workloads if w.name == name)

    def profiling(self, workload: WorkloadSpec) -> ProfileSpec | None:
        """How a workload is profiled, if at all: its own `profile`, else the experiment's."""
        chosen = workload.profile if workload.profile is not None else self.profile
        return chosen if chosen is not None and chosen.enabled else None
