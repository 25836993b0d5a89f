"""Starting one workload process and reading the kernel's account of it.

Wall time is taken in native code around fork and wait4; user, sys, max RSS,
faults and context switches come from wait4(), which sums the process and
every descendant it waited for; perf event counts (task clock, and cycles,
instructions, branch and cache misses where the machine has hardware
counters) come from the launcher too. The launcher also puts the tree in a
cgroup of its own for its peak memory, samples RSS and PSS over the run on
request, and reports the libraries the process mapped (which allocator really
ran). Nothing is timed in a Python loop.

Every process benchlab starts on this machine for a run (the workload, its
setup and clean steps, background loads) is started through the launcher with
`--die-with`, so that it dies with benchlab, `kill -9` included, and its tree
is killed and its cgroup removed when it ends, times out or is stopped. Output
goes to temporary files of which only a bounded tail is read back: a workload
that writes gigabytes costs the runner no memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from benchlab.errors import WorkloadFailed
from benchlab.locate import launcher_path
from benchlab.measure.account import read_account
from benchlab.measure.cgroup import cpu_cgroup_parent, remove_run_cgroup, run_cgroup_parent, tree_peak_unavailable

STDERR_TAIL_BYTES = 4000  # what a failed run keeps of its stderr
OUTPUT_TAIL_BYTES = 64 * 1024  # what is read back of stderr, and of stdout that nobody parses
STDOUT_LIMIT_BYTES = 64 * 1024 * 1024  # the most stdout read back for parsing (Google Benchmark JSON)


@dataclass(frozen=True)
class ContainerLaunch:
    """A container environment as the launcher enters it (see probe/src/container.rs)."""

    rootfs: str
    binds: tuple[str, ...] = ()  # host paths bound read-only at the same place inside
    memory_limit: int | None = None  # bytes
    cpus: float | None = None  # CPU quota, in CPUs


@dataclass(frozen=True)
class Launch:
    """Everything needed to start one run's process."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None = None
    cpus: frozenset[int] | None = None
    timeout: float = 600.0
    perf_counters: bool = False  # task clock, migrations; cycles, instructions, branch and cache misses where possible
    memory_interval: float | None = None  # seconds between RSS/PSS samples of the process tree; None: no sampling
    container: ContainerLaunch | None = None
    stdout_limit: int | None = None  # bytes of stdout read back whole for parsing; None: only a tail is kept


@dataclass(frozen=True)
class Usage:
    """What wait4() says about the finished process tree."""

    wall_s: float
    user_s: float
    sys_s: float
    max_rss_kib: int
    minor_faults: int
    major_faults: int
    voluntary_switches: int
    involuntary_switches: int
    counters: Mapping[str, float] = field(default_factory=dict)
    counters_note: str | None = None  # why some or all perf counters are missing
    mapped: tuple[str, ...] | None = None  # files the process mapped executable (its libraries); None: not seen
    tree_peak_kib: int | None = None  # memory high-water mark of the whole tree (its cgroup)
    memory: Mapping[str, float] = field(default_factory=dict)  # RSS/PSS means and peaks over the run's samples
    notes: tuple[str, ...] = ()  # what else could not be measured, and why


@dataclass(frozen=True)
class Finished:
    """A process that ended, however it ended."""

    exit_code: int | None
    signal: int | None
    timed_out: bool
    usage: Usage
    stdout: bytes = b""
    stderr: bytes = field(default=b"", repr=False)
    exec_error: str | None = None  # why the command could not be executed (exec's error), from the account

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def stderr_tail(self) -> str:
        return self.stderr[-STDERR_TAIL_BYTES:].decode(errors="replace").strip()

    def failure(self) -> WorkloadFailed:
        if self.timed_out:
            what = "ran past its timeout and was killed"
        elif self.signal is not None:
            what = f"was killed by signal {signal.Signals(self.signal).name}"
        else:
            what = f"exited with code {self.exit_code}"
        return WorkloadFailed(
            f"the workload {what}",
            process_exit_code=self.exit_code,
            stderr_tail=self.stderr_tail(),
            status="timeout" if self.timed_out else "failed",
        )


class Executor(Protocol):
    """Starts a process and waits for it; tests inject a fake one."""

    def run(self, launch: Launch) -> Finished: ...


def finished_from_account(
    fields: dict[str, Any] | None, launch: Launch, timed_out: bool, stdout: bytes, stderr: bytes, note: str | None
) -> Finished:
    """The launcher's JSON account of a run (None when it reported nothing) as a Finished; an
    account of another version, or with a field missing or mistyped, is refused rather than
    misread (`measure.account`). A run killed at its timeout has no account: its wall is the timeout."""
    if fields is None:
        if not timed_out:
            raise WorkloadFailed(
                "the launcher reported nothing", stderr_tail=stderr[-STDERR_TAIL_BYTES:].decode(errors="replace")
            )
        wall_s = int(launch.timeout * 1e9) / 1e9
        usage = Usage(wall_s, 0.0, 0.0, 0, 0, 0, 0, 0, notes=tuple(filter(None, [note])))
        return Finished(None, None, timed_out, usage, stdout, stderr)
    account = read_account(fields)
    usage = Usage(
        wall_s=account.wall_ns / 1e9,
        user_s=account.user_ns / 1e9,
        sys_s=account.sys_ns / 1e9,
        max_rss_kib=account.max_rss_kib,
        minor_faults=account.minor_faults,
        major_faults=account.major_faults,
        voluntary_switches=account.voluntary_switches,
        involuntary_switches=account.involuntary_switches,
        counters=account.counters,
        counters_note=account.counters_note,
        mapped=account.mapped,
        tree_peak_kib=account.tree_peak_kib,
        memory=account.memory,
        notes=tuple(filter(None, [account.mapped_note, account.tree_peak_note, note])),
    )
    return Finished(account.exit_code, account.signal, timed_out, usage, stdout, stderr, account.exec_error)


def read_tail(f: IO[bytes], size: int) -> bytes:
    """The last `size` bytes of a file the process wrote, never more."""
    end = f.seek(0, os.SEEK_END)
    f.seek(max(0, end - size))
    return f.read(size)


def read_stdout(f: IO[bytes], launch: Launch) -> bytes:
    """Stdout for parsing, whole up to the launch's limit (beyond it the run fails: a cut JSON
    document would read as a different one), or only its tail when nothing parses it."""
    if launch.stdout_limit is None:
        return read_tail(f, OUTPUT_TAIL_BYTES)
    size = f.seek(0, os.SEEK_END)
    if size > launch.stdout_limit:
        raise WorkloadFailed(
            f"the workload wrote {size} bytes to stdout, more than the {launch.stdout_limit} benchlab reads for its results"
        )
    f.seek(0)
    return f.read()


def start_launcher(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None = None,
    cpus: frozenset[int] | None = None,
    stdin: IO[bytes] | int = subprocess.DEVNULL,
    stdout: IO[bytes] | int,
    stderr: IO[bytes] | int,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """`benchlab-launch ARGS` leading its own session (so that its whole process group can be
    killed) and bound to die with this process (`--die-with`, see probe/src/launch.rs:
    PR_SET_PDEATHSIG, which fires when the *thread* that forks it ends; benchlab starts every
    process from its main thread). Its cgroup holds the tree for `stop_tree` and `clear_stale_runs`."""
    parent = run_cgroup_parent()[0]
    argv = [
        launcher_path(), "--die-with", str(os.getpid()), *(["--cgroup", parent] if parent is not None else []), *args,
    ]  # fmt: skip
    # Children inherit the spawning thread's affinity; the runner's own mask is restored at once.
    saved = os.sched_getaffinity(0) if cpus is not None else None
    try:
        if cpus is not None:
            os.sched_setaffinity(0, cpus)
        return subprocess.Popen(
            argv,
            env=dict(env),
            cwd=cwd,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except OSError as exc:
        raise WorkloadFailed(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    finally:
        if saved is not None:
            os.sched_setaffinity(0, saved)


def spawn_launcher(
    flags: Sequence[str], launch: Launch, *, stdout: IO[bytes] | int, stderr: IO[bytes] | int, result_fd: int
) -> subprocess.Popen[bytes]:
    """A one-shot launcher for `launch`, in its folder, environment and CPUs, reporting on `result_fd`."""
    args = ["--result-fd", str(result_fd), *flags, "--", *launch.argv]
    return start_launcher(
        args, env=launch.env, cwd=launch.cwd, cpus=launch.cpus, stdout=stdout, stderr=stderr, pass_fds=(result_fd,)
    )


def stop_tree(proc: subprocess.Popen[bytes]) -> None:
    """Kills the launcher's process group, reaps the launcher, and removes its cgroups once
    everything in them is gone (what left the group is killed there)."""
    kill_group(proc.pid)
    proc.wait()
    remove_run_cgroup(proc.pid)


class LocalExecutor:
    """Runs processes on this machine through the probe's launcher, one launcher per process.

    The launcher (`benchlab-launch`) forks the workload, times it and
    reports its wait4() account on a pipe: a command spawned straight from
    this interpreter would inherit its max-RSS watermark. Output goes to
    temporary files, so a chatty process cannot block on a full pipe. The
    launcher leads its own session, so a timeout kills the whole tree, and
    stragglers left in the group are killed after the run so they cannot
    disturb the next one. An experiment's runs go through one launcher that
    stays up instead (`measure.served`), which saves a process start per run;
    this one-shot form starts untimed steps and container runs.
    """

    def run(self, launch: Launch) -> Finished:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            account, timed_out = self._spawn_and_wait(launch, out, err)
            stderr = read_tail(err, OUTPUT_TAIL_BYTES)
            stdout = read_stdout(out, launch) if account is not None else read_tail(out, OUTPUT_TAIL_BYTES)
            return finished_from_account(account, launch, timed_out, stdout, stderr, tree_peak_unavailable())

    @staticmethod
    def _spawn_and_wait(launch: Launch, out: IO[bytes], err: IO[bytes]) -> tuple[dict[str, Any] | None, bool]:
        read_end, write_end = os.pipe()
        try:
            proc = spawn_launcher(["--mapped", *_launcher_flags(launch)], launch, stdout=out, stderr=err, result_fd=write_end)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        try:
            timed_out = not wait_exit(proc.pid, launch.timeout)
        except BaseException:  # Ctrl-C or SIGTERM in the runner: take the tree down with us
            stop_tree(proc)
            os.close(read_end)
            raise
        if timed_out:
            kill_group(proc.pid)
        proc.wait()
        kill_group(proc.pid)
        with os.fdopen(read_end, "rb") as result:
            text = result.read(OUTPUT_TAIL_BYTES)
        if not text.strip():  # the launcher was killed before it could remove its cgroup
            remove_run_cgroup(proc.pid)
        try:
            account = json.loads(text) if text.strip() and not timed_out else None
        except ValueError:
            account = None
        return account, timed_out


def _launcher_flags(launch: Launch) -> list[str]:
    """The launcher's optional measurements: the tree's cgroup wherever one can be made (a
    fresh cgroup costs a run ~0.3 ms), the others where the workload asks; and the container
    it enters, with its limits."""
    flags = ["--perf-counters"] if launch.perf_counters else []
    if launch.memory_interval:
        flags += ["--memory-interval-ms", str(max(1, round(launch.memory_interval * 1000)))]
    box = launch.container
    if box is not None:
        flags += ["--container", box.rootfs, *(f for path in box.binds for f in ("--bind", path))]
        if box.memory_limit is not None:
            flags += ["--memory-limit", str(box.memory_limit)]
        if box.cpus is not None:
            cpu_parent = cpu_cgroup_parent()
            flags += ["--cpu-limit", str(box.cpus), *(["--cpu-cgroup", cpu_parent] if cpu_parent else [])]
    return flags


def wait_exit(pid: int, timeout: float) -> bool:
    """Waits for the child to exit without reaping it; False on timeout."""
    fd = os.pidfd_open(pid)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if poller.poll(remaining * 1000):  # PEP 475: retried by Python itself after a signal
                return True
    finally:
        os.close(fd)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def child_environment(base: Mapping[str, str], overrides: Mapping[str, str], preload: Sequence[str]) -> dict[str, str]:
    """The child's environment: ours, the variant's values, then preloads ahead of any already set."""
    env = {**base, **overrides}
    if preload:
        env["LD_PRELOAD"] = " ".join([*preload, *filter(None, [env.get("LD_PRELOAD", "")])])
    return env
