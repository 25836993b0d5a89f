"""Where benchlab's native executables are: the probe runs the built-in workloads, the
launcher starts every run."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from benchlab.errors import EnvironmentProblem


def _native(name: str, variable: str) -> str:
    """$variable, else the executable installed beside this interpreter, else PATH."""
    explicit = os.environ.get(variable)
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise EnvironmentProblem(f"{variable}={explicit} is not an executable file")
        return explicit
    beside = Path(sys.executable).parent / name
    if os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found:
        return found
    raise EnvironmentProblem(f"{name} is not installed", hint=f"reinstall benchlab with `uv sync`, or set {variable}")


def probe_path() -> str:
    return _native("benchlab-probe", "BENCHLAB_PROBE")


def launcher_path() -> str:
    return _native("benchlab-launch", "BENCHLAB_LAUNCH")
