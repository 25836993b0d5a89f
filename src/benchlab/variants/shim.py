"""The `shim` field: benchlab's sampling allocator hook, preloaded ahead of the allocator.

The library itself (`probe/shim`) interposes the whole malloc family and goes on to
whichever allocator comes next in the preload order, so a shim variant measures the
hook on top of glibc, jemalloc, tcmalloc or mimalloc alike. Its settings travel as
environment variables, read once per process when it loads. What it finds comes back
as JSON lines in a report file benchlab names for each run (`BENCHLAB_SHIM_REPORT`),
never from its words on stderr, which are for people.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping

from benchlab.errors import EnvironmentProblem, WorkloadFailed
from benchlab.locate import SHIM_REPORT, shim_path
from benchlab.metrics import Metric
from benchlab.spec.models import ShimSpec

SHIM_PROTOCOL = 1  # the shim's REPORT_PROTOCOL; both change together


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


def shim_report_environment(spec: ShimSpec | None) -> dict[str, str]:
    """A report file of its own for one run of a shim variant, in a fresh folder (which a
    container binds), so that no run counts another's findings; `shim_findings` reads and
    removes both."""
    if spec is None:
        return {}
    return {SHIM_REPORT: os.path.join(tempfile.mkdtemp(prefix="benchlab-shim-"), "report.jsonl")}


def shim_events(path: str) -> list[dict[str, object]]:
    """The JSON lines of a report file, each checked for the protocol this benchlab reads;
    the file is removed."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line for line in f if line.strip()]
    except FileNotFoundError:
        return []
    finally:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    try:
        events = [json.loads(line) for line in lines]
    except ValueError as exc:
        raise WorkloadFailed(f"the shim's report {path} is not JSON lines: {exc}") from None
    for event in events:
        version = event.get("protocol") if isinstance(event, dict) else None
        if version != SHIM_PROTOCOL:
            raise EnvironmentProblem(
                f"the allocator shim speaks report protocol {version}, this benchlab reads {SHIM_PROTOCOL}",
                hint="reinstall benchlab so that its shim is built from the same source",
            )
    return events


def shim_findings(env: Mapping[str, str]) -> list[Metric]:
    """Use-after-free writes the quarantine caught in the run's processes (whose environment
    was `env`). A finding, not a cost: it carries no direction, and a workload with one
    deserves a bug report."""
    path = env.get(SHIM_REPORT)
    caught = [e for e in shim_events(path) if e["event"] == "use_after_free_write"] if path else []
    return [Metric(FINDING, float(len(caught)), "count", "none")]
