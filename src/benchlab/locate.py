"""Where the probe executable is: it runs the built-in workloads and launches every run."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from benchlab.errors import EnvironmentProblem


def probe_path() -> str:
    """BENCHLAB_PROBE, else the probe installed beside this interpreter, else PATH."""
    explicit = os.environ.get("BENCHLAB_PROBE")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise EnvironmentProblem(f"BENCHLAB_PROBE={explicit} is not an executable file")
        return explicit
    beside = Path(sys.executable).parent / "benchlab-probe"
    if os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("benchlab-probe")
    if found:
        return found
    raise EnvironmentProblem("benchlab-probe is not installed", hint="reinstall benchlab with `uv sync`, or set BENCHLAB_PROBE")
