"""The CPU suite in a spec: `suite = "cpu"` (or a `[suite]` table) stands for its
workloads, each run single-core, multi-core (one copy per thread, Geekbench 5)
and, where the task splits, as one shared task (Geekbench 6).

The expansion happens before validation, so the stored spec lists plain
built-in workloads: any experiment whose workloads are `cpu.*` built-ins is
scored, however it was written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchlab.errors import SpecError
from benchlab.spec.load import take_section
from benchlab.spec.suite import SuiteSpec
from benchlab.suite.baseline import Baseline, load_baseline

if TYPE_CHECKING:
    from benchlab.spec.models import WorkloadSpec

SINGLE, MULTI, SHARED = "single-core", "multi-core", "shared"
MODES = (SINGLE, MULTI, SHARED)
_SUFFIX = {SINGLE: "single", MULTI: "multi", SHARED: "shared"}


@dataclass(frozen=True)
class SuiteWorkload:
    """A spec workload recognised as part of the suite."""

    task: str
    mode: str


def expand(suite: SuiteSpec, baseline: Baseline, where: str) -> list[dict[str, Any]]:
    tasks = []
    for i, name in enumerate(suite.workloads):
        task = baseline.task(name)
        if task is None:
            raise SpecError(f"the CPU suite has no workload '{name}'", where=f"{where}.workloads[{i}]")
        tasks.append(task)
    workloads = []
    for task in tasks or baseline.tasks.values():
        runs: list[tuple[str, dict[str, Any]]] = []
        if suite.single_core:
            runs.append((SINGLE, {"threads": 1}))
        if suite.multi_core:
            runs.append((MULTI, {"threads": suite.threads}))
        if suite.shared and "shared" in task.modes:
            runs.append((SHARED, {"threads": suite.threads, "mode": "shared"}))
        for mode, options in runs:
            if suite.iterations:
                options["iterations"] = suite.iterations
            elif suite.rounds != 1.0:
                options["iterations"] = max(1, round(task.iterations * suite.rounds))
            workloads.append(
                {"name": f"{task.name}.{_SUFFIX[mode]}", "builtin": task.name, "options": options, "perf_counters": True}
            )
    if not workloads:
        raise SpecError("the suite selection runs nothing (single_core, multi_core and shared all off?)", where=where)
    return workloads


def expand_spec(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The spec with its `suite` key replaced by the workloads it stands for; done by whoever
    reads a spec before `benchlab.spec.spec_from_dict`, since the spec layer sits below the suite."""
    out, suite = take_section(data, "suite", SuiteSpec, source)
    if suite is None:
        return out
    given = out.get("workloads", [])
    if not isinstance(given, list):
        raise SpecError("workloads must be a list", where=f"{source}: workloads")
    out["workloads"] = [*given, *expand(suite, load_baseline(), f"{source}: suite")]
    return out


def classify(workload: WorkloadSpec, baseline: Baseline) -> SuiteWorkload | None:
    """Whether a stored spec workload is a suite task, and in which mode it ran."""
    task = workload.builtin
    if task is None or task not in baseline.tasks:
        return None
    options = workload.options
    if str(options.get("mode", "copies")) == "shared":
        return SuiteWorkload(task, SHARED)
    return SuiteWorkload(task, SINGLE if str(options.get("threads", 1)) == "1" else MULTI)
