"""The `shim` field: benchlab's sampling allocator hook, preloaded ahead of the allocator.

The library itself (`probe/shim`) interposes the whole malloc family and goes on to
whichever allocator comes next in the preload order, so a shim variant measures the
hook on top of glibc, jemalloc, tcmalloc or mimalloc alike. Its settings travel as
environment variables, read once per process when it loads.
"""

from __future__ import annotations

import re

from benchlab.locate import shim_path
from benchlab.metrics import Metric
from benchlab.spec.models import ShimSpec

_CAUGHT = re.compile(rb"^benchlab-shim: use-after-free write caught", re.MULTILINE)


def shim_preload(spec: ShimSpec | None) -> list[str]:
    return [] if spec is None else [shim_path()]


def shim_environment(spec: ShimSpec | None) -> dict[str, str]:
    if spec is None:
        return {}
    env = {
        "BENCHLAB_SHIM_SAMPLING": str(spec.sampling),
        "BENCHLAB_SHIM_QUARANTINE": str(spec.quarantine),
        "BENCHLAB_SHIM_QUARANTINE_KIB": str(spec.quarantine_kib),
    }
    if spec.scope is not None:
        env["BENCHLAB_SHIM_SCOPE"] = spec.scope
    return env


FINDING = "uaf_writes_caught"  # the one metric the shim adds to a run


def shim_findings(stderr: bytes) -> list[Metric]:
    """Use-after-free writes the quarantine caught in the run's processes. A finding, not
    a cost: it carries no direction, and a workload with one deserves a bug report."""
    return [Metric(FINDING, float(len(_CAUGHT.findall(stderr))), "count", "none")]
