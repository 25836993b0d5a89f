"""Starting one workload process and reading the kernel's account of it.

Wall time brackets the process from spawn to exit (CLOCK_MONOTONIC, read
immediately around the spawn and the exit notification); user, sys, max RSS,
faults and context switches come from wait4(), which sums the process and
every descendant it waited for. Nothing is timed in a Python loop.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from benchlab.errors import WorkloadFailed

STDERR_TAIL_BYTES = 4000


@dataclass(frozen=True)
class Launch:
    """Everything needed to start one run's process."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None = None
    cpus: frozenset[int] | None = None
    timeout: float = 600.0


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


@dataclass(frozen=True)
class Finished:
    """A process that ended, however it ended."""

    exit_code: int | None
    signal: int | None
    timed_out: bool
    usage: Usage
    stdout: bytes = b""
    stderr: bytes = field(default=b"", repr=False)

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
            exit_code=self.exit_code,
            stderr_tail=self.stderr_tail(),
            status="timeout" if self.timed_out else "failed",
        )


class Executor(Protocol):
    """Starts a process and waits for it; tests inject a fake one."""

    def run(self, launch: Launch) -> Finished: ...


def _read_all(f: tempfile._TemporaryFileWrapper[bytes]) -> bytes:
    f.seek(0)
    return f.read()


class LocalExecutor:
    """Runs processes on this machine.

    Output goes to temporary files rather than pipes, so the wait needs no
    reader thread and a chatty process cannot block on a full pipe. The child
    leads its own session so a timeout can kill the whole tree, and stragglers
    left in its process group are killed after it exits so they cannot disturb
    the next run.
    """

    def run(self, launch: Launch) -> Finished:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            pid, start, end, status, ru, timed_out = self._spawn_and_wait(launch, out, err)
            usage = Usage(
                wall_s=(end - start) / 1e9,
                user_s=ru.ru_utime,
                sys_s=ru.ru_stime,
                max_rss_kib=ru.ru_maxrss,
                minor_faults=ru.ru_minflt,
                major_faults=ru.ru_majflt,
                voluntary_switches=ru.ru_nvcsw,
                involuntary_switches=ru.ru_nivcsw,
            )
            return Finished(
                exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                timed_out=timed_out,
                usage=usage,
                stdout=_read_all(out),
                stderr=_read_all(err),
            )

    @staticmethod
    def _spawn_and_wait(
        launch: Launch, out: tempfile._TemporaryFileWrapper[bytes], err: tempfile._TemporaryFileWrapper[bytes]
    ) -> tuple[int, int, int, int, os.struct_rusage, bool]:
        # Children inherit the spawning thread's affinity; the runner's own mask is restored at once.
        saved = os.sched_getaffinity(0) if launch.cpus is not None else None
        try:
            if launch.cpus is not None:
                os.sched_setaffinity(0, launch.cpus)
            start = time.monotonic_ns()
            proc = subprocess.Popen(
                list(launch.argv),
                env=dict(launch.env),
                cwd=launch.cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            raise WorkloadFailed(f"cannot start {launch.argv[0]}: {exc.strerror or exc}") from None
        finally:
            if saved is not None:
                os.sched_setaffinity(0, saved)
        try:
            timed_out = not _wait_exit(proc.pid, launch.timeout)
        except BaseException:  # Ctrl-C or SIGTERM in the runner: take the tree down with us
            _kill_group(proc.pid)
            os.wait4(proc.pid, 0)
            proc.returncode = -1
            raise
        end = time.monotonic_ns()
        if timed_out:
            _kill_group(proc.pid)
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = status  # reaped here; keep Popen from trying again
        _kill_group(proc.pid)
        return proc.pid, start, end, status, ru, timed_out


def _wait_exit(pid: int, timeout: float) -> bool:
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
            try:
                if poller.poll(remaining * 1000):
                    return True
            except InterruptedError:  # pragma: no cover - PEP 475 retries poll itself
                continue
    finally:
        os.close(fd)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def environment(base: Mapping[str, str], overrides: Mapping[str, str], preload: Sequence[str]) -> dict[str, str]:
    """The child's environment: ours, the variant's values, then preloads ahead of any already set."""
    env = {**base, **overrides}
    if preload:
        env["LD_PRELOAD"] = " ".join([*preload, *filter(None, [env.get("LD_PRELOAD", "")])])
    return env
