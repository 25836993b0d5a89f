"""The `background` field: a load that runs beside every run of the variant
(`background = "stress-ng --cpu 1"`, or a shell loop), started before the
run's process and killed, with everything it started, after it ends.

A load that stops before the run ends would leave part of the run unloaded,
so that run fails instead of being measured.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from benchlab.errors import WorkloadFailed
from benchlab.workloads.command import find_executable


def background_argv(command: list[str], where: str) -> list[str]:
    if not command:
        return []
    return [find_executable(command[0], where), *command[1:]]


@contextmanager
def background_load(argv: list[str]) -> Iterator[None]:
    """Runs `argv` in its own session for the duration of the block."""
    if not argv:
        yield
        return
    try:
        load = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
    except OSError as exc:
        raise WorkloadFailed(f"the background load {argv[0]} did not start: {exc.strerror or exc}") from None
    try:
        yield
        ended = load.poll()
        if ended is not None:
            raise WorkloadFailed(f"the background load `{' '.join(argv)}` ended (exit {ended}) before the run did")
    finally:
        with suppress(ProcessLookupError):
            os.killpg(load.pid, signal.SIGKILL)
        load.wait()
