"""Where benchlab's native parts are: the probe runs the built-in workloads, the
launcher starts every run, the allocator shim is preloaded into variants that ask for it,
the column reader reads a big report's values out of a SQLite file."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from benchlab.errors import EnvironmentProblem

# Where the allocator shim writes its findings (JSON lines): named here, beside the shim's own path,
# because a local run (variants) and a remote one (measure.remote) both hand it on.
SHIM_REPORT = "BENCHLAB_SHIM_REPORT"


def _native(name: str, variable: str) -> str:
    """$variable, else the executable installed beside this interpreter, else PATH."""
    explicit = os.environ.get(variable)
    if explicit:  # a folder is "executable" too: only a regular file is a program
        if not os.path.isfile(explicit) or not os.access(explicit, os.X_OK):
            raise EnvironmentProblem(f"{variable}={explicit} is not an executable file")
        return explicit
    beside = Path(sys.executable).parent / name
    if os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found:
        return found
    raise EnvironmentProblem(f"{name} is not installed", hint=f"reinstall benchlab with `uv sync`, or set {variable}")


def columns_path() -> str:
    return _native("benchlab-columns", "BENCHLAB_COLUMNS")


def probe_path() -> str:
    return _native("benchlab-probe", "BENCHLAB_PROBE")


def launcher_path() -> str:
    return _native("benchlab-launch", "BENCHLAB_LAUNCH")


def shim_path() -> str:
    """$BENCHLAB_SHIM, else the library built into the package (`benchlab._shim`, a plain
    shared object that Python never imports; finding it does not load it)."""
    explicit = os.environ.get("BENCHLAB_SHIM")
    if explicit:
        if not os.path.isfile(explicit):
            raise EnvironmentProblem(f"BENCHLAB_SHIM={explicit} is not a file")
        return explicit
    spec = importlib.util.find_spec("benchlab._shim")
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        hint = "reinstall benchlab with `uv sync`, or set BENCHLAB_SHIM"
        raise EnvironmentProblem("the allocator shim is not built", hint=hint)
    return spec.origin
