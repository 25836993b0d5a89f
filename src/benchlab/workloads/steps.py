"""A workload's untimed steps (`setup`, `clean`): run outside the timed process,
in the workload's folder with the variant's environment, so that a build can
be made clean before every timed run, the way people time `make -jN`.

A step is started like a run, through the launcher: it gets the run's timeout,
its whole process tree is killed when it ends, times out or benchlab dies
(`kill -9` included), and only a tail of its output is kept.

A step that fails fails the run it prepares: a build timed on a tree that did
not clean would measure an incremental build.
"""

from __future__ import annotations

from collections.abc import Mapping

from benchlab.errors import WorkloadFailed
from benchlab.measure.process import Launch, LocalExecutor


def run_step(step: str, argv: list[str], *, cwd: str | None, env: Mapping[str, str], timeout: float) -> None:
    shown = " ".join(argv)
    try:
        done = LocalExecutor().run(Launch(argv=tuple(argv), env=env, cwd=cwd, timeout=timeout))
    except WorkloadFailed as exc:
        raise WorkloadFailed(f"the {step} step `{shown}` did not start: {exc.message}") from None
    if done.timed_out:
        raise WorkloadFailed(f"the {step} step `{shown}` ran past {timeout:g} s and was killed", status="timeout")
    if done.exec_error is not None:
        raise WorkloadFailed(f"the {step} step `{shown}` did not start: {done.exec_error}", stderr_tail=done.stderr_tail())
    if not done.ok:
        how = f"exited {done.exit_code}" if done.signal is None else f"was killed by signal {done.signal}"
        raise WorkloadFailed(f"the {step} step `{shown}` {how}", stderr_tail=done.stderr_tail())
