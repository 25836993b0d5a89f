"""A workload's untimed steps (`setup`, `clean`): run outside the timed process,
in the workload's folder with the variant's environment, so that a build can
be made clean before every timed run, the way people time `make -jN`.

A step that fails fails the run it prepares: a build timed on a tree that did
not clean would measure an incremental build.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

from benchlab.errors import WorkloadFailed


def run_step(step: str, argv: list[str], *, cwd: str | None, env: Mapping[str, str], timeout: float) -> None:
    try:
        done = subprocess.run(argv, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise WorkloadFailed(f"the {step} step `{' '.join(argv)}` ran past {timeout:g} s") from None
    except OSError as exc:
        raise WorkloadFailed(f"the {step} step `{' '.join(argv)}` did not start: {exc.strerror or exc}") from None
    if done.returncode != 0:
        raise WorkloadFailed(f"the {step} step `{' '.join(argv)}` exited {done.returncode}", stderr_tail=done.stderr[-2000:])
