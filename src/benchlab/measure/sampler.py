"""Profiled runs: the workload's process tree under `perf record` (Debian's `linux-perf`), user and
kernel stacks, then folded into stacks by perf itself (`perf script -s perf_stacks.py`).

perf samples hardware cycles where the machine has a PMU and CPU time (`cpu-clock`) where it has
none, and says which in the stacks it writes: a virtual machine without counters records
`cpu-clock` when asked for cycles. Each sample carries its period, so a stack's weight is its
summed periods (nanoseconds of CPU time for `cpu-clock`) and a frequency-driven sampler weighs
busy and idle stretches alike.

The variant's preloaded libraries (an allocator, the shim) belong to the workload, not to perf:
they are handed on through `env` after perf's `--`, so perf itself runs unchanged and the shim's
report is the workload's alone.

Counters (cycles, instructions, misses) are counted by `perf stat` run inside `perf record`,
between it and the workload: so they count the workload's tree alone, never the sampler's own
work, and are exact counts rather than sums of sample periods. perf stat writes them as JSON
lines (`-j`), one object per event.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchlab.errors import EnvironmentProblem, WorkloadFailed
from benchlab.measure.perf_stacks import event_name
from benchlab.measure.process import Executor, Launch, LocalExecutor
from benchlab.spec.models import ProfileSpec
from benchlab.stacks import DamagedProfile, StackDocument, read_document

PERF_MISSING = "perf is not installed: profiled runs need it (apt-get install linux-perf)"
HARDWARE_COUNTERS = ("cycles", "instructions", "cache-misses", "branch-misses")  # counted where the machine has a PMU
FOLD_SCRIPT = Path(__file__).with_name("perf_stacks.py")
FOLD_TIMEOUT = 600.0  # seconds perf may take to fold one run's samples


def perf_path() -> str:
    found = shutil.which("perf")
    if found is None:
        raise EnvironmentProblem(PERF_MISSING)
    return found


def hardware_cycles(perf: str) -> bool:
    """Whether this machine counts CPU cycles (a PMU, virtualised or not): `perf stat -x,` says
    `<not supported>` in its first CSV field where it cannot."""
    done = LocalExecutor().run(
        Launch(argv=(perf, "stat", "-x", ",", "-e", "cycles", "--", "true"), env=dict(os.environ), timeout=30)
    )
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return done.ok and bool(lines) and not lines[-1].startswith("<not")


@dataclasses.dataclass
class Counted:
    """What perf stat counted over one run: each event's count (time events in seconds), the
    events it could not count (`<not supported>` by this machine, `<not counted>`), and those it
    counted part of the run only and scaled up (more events than the PMU has counters)."""

    values: dict[str, float] = dataclasses.field(default_factory=dict)
    uncounted: list[str] = dataclasses.field(default_factory=list)
    multiplexed: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Sampler:
    """How this machine's profiled runs are sampled."""

    perf: str
    event: str  # `cycles` where the machine counts them, else `cpu-clock`
    settings: ProfileSpec
    counters: tuple[str, ...] = ()  # events perf stat counts over the run

    def record(self, launch: Launch, data: Path, *, system: bool) -> Launch:
        """`launch` under perf record (`system`: every CPU, else the launched tree), writing to
        `data` only: no build-id cache in root's home (`--no-buildid-cache`), and no BPF program
        events, whose collection costs every profiled run a second of start-up (the samples are
        folded right after, on the files perf saw)."""
        env = dict(launch.env)
        preload = env.pop("LD_PRELOAD", None)
        child = ("env", f"LD_PRELOAD={preload}", *launch.argv) if preload else launch.argv
        if self.counters:
            child = (
                self.perf, "stat", "-j", "-o", str(_counts(data)), *(["--all-cpus"] if system else []),
                *(arg for event in self.counters for arg in ("-e", event)), "--", *child,
            )  # fmt: skip
        argv = (
            self.perf, "record", "--quiet", "--no-buildid", "--no-buildid-cache", "--no-bpf-event",
            *(["--all-cpus"] if system else []), *self._events(), "--call-graph", self.settings.call_graph,
            "--max-size", f"{self.settings.max_size}B", "-o", str(data), "--", *child,
        )  # fmt: skip
        return dataclasses.replace(launch, argv=argv, env=env, perf_counters=False, memory_interval=None, stdout_limit=None)

    def _events(self) -> list[str]:
        """What perf record samples: the event at the spec's frequency; with off-CPU time, every
        switch of a thread out (`sched:sched_switch`, at the stack it leaves from, `-c 1`: a
        tracepoint sampled at a frequency would skip switches) and back in (`--switch-events`)."""
        frequency = str(self.settings.frequency)
        if not self.settings.off_cpu:
            return ["-e", self.event, "-F", frequency]
        return ["-e", f"{self.event}/freq={frequency}/", "-e", "sched:sched_switch", "-c", "1", "--switch-events"]

    def fold(self, data: Path, where: Executor) -> StackDocument:
        """The stacks of a finished profiled run, or WorkloadFailed saying why there are none;
        folded `where` it ran (a guest's perf reads the guest's own kernel symbols)."""
        if not data.exists() or data.stat().st_size == 0:
            raise WorkloadFailed("perf recorded nothing (see its message)")
        stacks = data.with_name("stacks.json")
        done = where.run(
            Launch(
                argv=(self.perf, "script", "-i", str(data), "-s", str(FOLD_SCRIPT)),
                env={**os.environ, "BENCHLAB_STACKS": str(stacks)}, timeout=FOLD_TIMEOUT,
            )
        )  # fmt: skip
        if not done.ok or not stacks.exists():
            raise WorkloadFailed("perf could not fold its samples", stderr_tail=done.stderr_tail())
        try:
            return read_document(stacks.read_bytes())
        except DamagedProfile as exc:
            raise WorkloadFailed(f"perf's folded samples are unreadable: {exc}") from None

    def counted(self, data: Path) -> Counted:
        """What perf stat counted over a finished profiled run; WorkloadFailed where it wrote nothing."""
        counted = Counted()
        if not self.counters:
            return counted
        try:
            lines = _counts(data).read_text(errors="replace").splitlines()
        except OSError:
            raise WorkloadFailed("perf stat counted nothing (see its message)") from None
        uncounted: list[str] = []
        for line in lines:
            if not line.startswith("{"):
                continue  # its header comment, blank lines
            try:
                entry = json.loads(line)
                event, value = event_name(str(entry["event"])), str(entry["counter-value"])
                running = float(entry.get("pcnt-running", 100))
            except (ValueError, KeyError, TypeError):
                raise WorkloadFailed(f"perf stat wrote a line benchlab cannot read: {line[:200]!r}") from None
            try:
                number = float(value) * (1e-3 if entry.get("unit") == "msec" else 1.0)  # task-clock's: in seconds
            except ValueError:
                uncounted.append(event)  # <not supported>, <not counted>
                continue
            if math.isfinite(number) and number >= 0:  # a hybrid CPU's PMUs each count their cores' share
                counted.values[event] = counted.values.get(event, 0.0) + number
                if running < 100 and event not in counted.multiplexed:
                    counted.multiplexed.append(event)
        counted.uncounted = [e for e in dict.fromkeys(uncounted) if e not in counted.values]
        return counted

    def truncated(self, data: Path) -> bool:
        return data.exists() and data.stat().st_size >= self.settings.max_size


def _counts(data: Path) -> Path:
    return data.with_name("counters.json")


@contextmanager
def scratch(within: Path | None = None) -> Iterator[Path]:
    """A private folder for one profiled run's perf data (in `within`: a guest's shared folder),
    removed after it whatever happens."""
    folder = Path(tempfile.mkdtemp(prefix="benchlab-profile-", dir=within))
    try:
        yield folder / "perf.data"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
