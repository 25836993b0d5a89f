"""An experiment's runs served by one launcher that stays up for the whole experiment.

A launcher process started from this interpreter for every run costs more than the shortest
runs themselves: forking a 100+ MiB interpreter, then the launcher's exec and dynamic loading,
~1.5 ms a run against /bin/true's 0.6 ms. So the runner starts one launcher in serving mode
(`benchlab-launch --serve`, probe/src/serve.rs) on its first run and sends it each run as a
JSON line; the launcher forks the run, answers with its account as a JSON line, and the runner
stores the run before it sends the next, so every run is still committed the moment it ends.

A served run keeps what a one-shot launch (`process.LocalExecutor`) guarantees: the child is
forked from the small launcher (its max-RSS watermark, not this interpreter's), measured the
same way, in a fresh cgroup of its own, with its own environment, folder and CPUs; its timeout
is enforced by the launcher, which kills the run's whole process group and cgroup, and its
output goes to two files of which only a bounded tail is read back. Nothing outlives benchlab:
the launcher dies with it (`--die-with`), and kills the run in flight first; on Ctrl-C or
SIGTERM here, or a launcher that stops answering (no answer within the run's timeout plus
ANSWER_GRACE_S, the request's sending included), the launcher is told to stop (SIGTERM) and
its group and cgroup are killed and removed behind it. A launcher that dies unexpectedly fails
the run in flight ("the launcher reported nothing") and the next run starts a new one.

Container runs keep the one-shot launcher: it enters the container's namespaces itself; so do
runs whose command line or environment holds bytes that are no UTF-8.
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
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, Any

from benchlab.errors import WorkloadFailed
from benchlab.measure.cgroup import REMOVE_WAIT_S, remove_run_cgroup, tree_peak_unavailable
from benchlab.measure.process import (
    OUTPUT_TAIL_BYTES,
    Finished,
    Launch,
    LocalExecutor,
    finished_from_account,
    kill_group,
    read_stdout,
    read_tail,
    start_launcher,
    wait_exit,
)

ANSWER_GRACE_S = 10.0  # beyond a run's timeout: the launcher kills and reaps an overstaying run itself


@dataclass
class Serving:
    """A serving launcher: requests go to its stdin, answers come from its stdout, and the run's
    output goes to two files it empties before every run."""

    proc: subprocess.Popen[bytes]
    requests: int
    answers: int
    out: IO[bytes]
    err: IO[bytes]
    pending: bytearray = field(default_factory=bytearray)
    stopped: bool = False
    silence: str = ""  # why the last `ask` had no answer: "ended", "late" or "garbled"

    def __post_init__(self) -> None:
        os.set_blocking(self.requests, False)  # written only as far as `_send` finds room

    def ask(self, request: bytes, timeout: float) -> dict[str, Any] | None:
        """The answer to one request line within `timeout` seconds, the request's sending included
        (a launcher that stops reading cannot hold this side in a full pipe); None when the launcher
        ended, did not answer in time or answered no JSON (`silence` says which)."""
        deadline = time.monotonic() + timeout
        self.silence = ""
        if not self._send(request, deadline):
            return None
        poller = select.poll()
        poller.register(self.answers, select.POLLIN)
        while b"\n" not in self.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not poller.poll(remaining * 1000):
                self.silence = "late"
                return None
            chunk = os.read(self.answers, OUTPUT_TAIL_BYTES)
            if not chunk:
                self.silence = "ended"
                return None
            self.pending += chunk
        line, _, rest = bytes(self.pending).partition(b"\n")
        self.pending = bytearray(rest)
        try:
            answer: dict[str, Any] = json.loads(line)
        except ValueError:
            self.silence = "garbled"
            return None
        return answer

    def _send(self, data: bytes, deadline: float) -> bool:
        poller = select.poll()
        poller.register(self.requests, select.POLLOUT)
        try:
            while data:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not poller.poll(remaining * 1000):
                    self.silence = "late"
                    return False
                with contextlib.suppress(BlockingIOError):  # room for less than a pipe's atomic write
                    data = data[os.write(self.requests, data) :]
        except BrokenPipeError:
            self.silence = "ended"
            return False
        return True

    def run(self, request: bytes, launch: Launch, peak_note: str | None) -> Finished:
        """One run served. A launcher that died or hangs is stopped (`stopped`), with its run,
        which fails ("the launcher reported nothing"); a run past its timeout reads as a one-shot
        one, killed at its timeout with no account."""
        account = self.ask(request, launch.timeout + ANSWER_GRACE_S)
        timed_out = account.pop("timed_out", False) if account is not None else False
        if account is not None and "error" in account:
            raise WorkloadFailed(f"cannot start {launch.argv[0]}: {account['error']}")
        if account is None:
            self.stop()
        try:
            stderr = read_tail(self.err, OUTPUT_TAIL_BYTES)
            complete = account is not None and not timed_out
            stdout = read_stdout(self.out, launch) if complete else read_tail(self.out, OUTPUT_TAIL_BYTES)
        finally:
            if account is None:
                self.close_files()
        return finished_from_account(account if not timed_out else None, launch, timed_out, stdout, stderr, peak_note)

    def stop(self) -> None:
        """Ends the launcher and whatever it runs: told first (SIGTERM: the run's group is killed,
        its cgroup removed), then its own group and cgroup are killed and removed behind it. Once;
        a launcher that ended (and was reaped) already has only its group and cgroup left to go."""
        if self.stopped:
            return
        self.stopped = True
        os.close(self.requests)  # an idle launcher also ends at end of file
        if self.proc.returncode is None:  # not reaped yet, so its pid is still its own (once reaped, another's)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGTERM)
                os.kill(self.proc.pid, signal.SIGCONT)  # a stopped launcher would hold SIGTERM until REMOVE_WAIT_S
            wait_exit(self.proc.pid, REMOVE_WAIT_S)
        kill_group(self.proc.pid)
        self.proc.wait()
        remove_run_cgroup(self.proc.pid)
        os.close(self.answers)

    def close_files(self) -> None:
        self.out.close()
        self.err.close()


def request_line(launch: Launch) -> bytes | None:
    """The run as the launcher reads it: one JSON line; None for names that are no UTF-8 (bytes
    Python decoded with surrogates, which JSON cannot carry), left to a one-shot launcher."""
    request = {
        "argv": list(launch.argv), "env": dict(launch.env), "cwd": launch.cwd,
        "cpus": sorted(launch.cpus) if launch.cpus is not None else None,
        "timeout_ms": max(1, round(launch.timeout * 1000)), "perf_counters": launch.perf_counters, "mapped": True,
        "memory_interval_ms": max(1, round(launch.memory_interval * 1000)) if launch.memory_interval else 0,
    }  # fmt: skip
    try:
        return json.dumps(request, ensure_ascii=False).encode() + b"\n"
    except UnicodeEncodeError:
        return None


class ServedExecutor:
    """Runs processes on this machine through one serving launcher, started on first use and
    stopped by `close` (or the end of a `with` block); container runs go to a one-shot launcher."""

    def __init__(self) -> None:
        self._launcher: Serving | None = None
        self._one_shot = LocalExecutor()

    def __enter__(self) -> ServedExecutor:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        launcher, self._launcher = self._launcher, None
        if launcher is not None:
            launcher.stop()
            launcher.close_files()

    def run(self, launch: Launch) -> Finished:
        request = request_line(launch)
        if launch.container is not None or request is None:
            return self._one_shot.run(launch)
        launcher = self._launcher or self._start()
        try:
            return launcher.run(request, launch, tree_peak_unavailable())
        except WorkloadFailed:
            raise
        except BaseException:  # Ctrl-C or SIGTERM in the runner: take the tree down with us
            self.close()
            raise
        finally:
            if launcher.stopped:  # it died, or hangs: the next run starts a new one
                self._launcher = None

    def _start(self) -> Serving:
        with contextlib.ExitStack() as undo:  # what is made here is closed again if the launcher cannot start
            out = undo.enter_context(tempfile.TemporaryFile())
            err = undo.enter_context(tempfile.TemporaryFile())
            requests_read, requests = os.pipe()
            answers, answers_write = os.pipe()
            undo.callback(os.close, requests)
            undo.callback(os.close, answers)
            try:
                proc = start_launcher(
                    ["--serve", "--stdout-fd", str(out.fileno()), "--stderr-fd", str(err.fileno())], env=os.environ,
                    stdin=requests_read, stdout=answers_write, stderr=err, pass_fds=(out.fileno(), err.fileno()),
                )  # fmt: skip
            finally:
                os.close(requests_read)
                os.close(answers_write)
            undo.pop_all()
        self._launcher = Serving(proc, requests, answers, out, err)
        return self._launcher
