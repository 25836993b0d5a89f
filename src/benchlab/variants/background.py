"""The `background` field: a load that runs beside every run of the variant
(`background = "stress-ng --cpu 1"`, or a shell loop), started before the
run's process and killed, with everything it started, after it ends.

The load is started through the launcher (`measure.process.spawn_launcher`),
so that it leads its own session, lives in a cgroup of its own and dies with
benchlab, `kill -9` included: a busy loop can never outlive the experiment.
A load that stops before the run ends would leave part of the run unloaded,
so that run fails instead of being measured.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from benchlab.errors import WorkloadFailed
from benchlab.measure.process import Launch, spawn_launcher, stop_tree
from benchlab.workloads.command import find_executable


def background_argv(command: list[str], where: str) -> list[str]:
    if not command:
        return []
    return [find_executable(command[0], where), *command[1:]]


def _ended(result: int) -> str:
    """How the load ended, from the launcher's account of it."""
    try:
        account = json.loads(os.read(result, 65536) or b"{}")
    except (OSError, ValueError):
        account = {}
    if account.get("signal") is not None:
        return f"killed by signal {account['signal']}"
    return f"exit {account.get('exit_code')}"


@contextmanager
def background_load(argv: list[str]) -> Iterator[None]:
    """Runs `argv` in its own session for the duration of the block."""
    if not argv:
        yield
        return
    read_end, write_end = os.pipe()
    try:
        load = spawn_launcher(
            [],
            Launch(argv=tuple(argv), env=os.environ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            result_fd=write_end,
        )
    except WorkloadFailed as exc:
        os.close(read_end)
        raise WorkloadFailed(f"the background load {argv[0]} did not start: {exc.message}") from None
    finally:
        os.close(write_end)
    try:
        yield
        if load.poll() is not None:
            raise WorkloadFailed(f"the background load `{' '.join(argv)}` ended ({_ended(read_end)}) before the run did")
    finally:
        stop_tree(load)
        os.close(read_end)
