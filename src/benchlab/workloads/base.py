"""What a workload kind must provide to the runner."""

from __future__ import annotations

from typing import Any, Protocol

from benchlab.measure.process import Finished
from benchlab.metrics import Metric
from benchlab.spec.models import WorkloadSpec


class Workload(Protocol):
    spec: WorkloadSpec

    @property
    def version(self) -> str:
        """Changes whenever the work changes; runs of different versions are never compared."""
        ...

    def argv(self) -> list[str]: ...

    def metrics(self, finished: Finished) -> list[Metric]:
        """The workload's own metrics from a successful process; raises WorkloadFailed."""
        ...

    def details(self, finished: Finished) -> dict[str, Any]:
        """What a successful run records beyond metrics, in its details (a Google Benchmark
        binary: which of its benchmarks failed; an app cycle: its launches); often nothing."""
        ...


def metric_directions(spec: WorkloadSpec) -> dict[str, str]:
    return {name: s.direction for name, s in spec.metrics.items() if s.direction is not None}
