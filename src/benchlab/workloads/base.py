"""What a workload kind must provide to the runner."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

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


@runtime_checkable
class RecordsDetails(Protocol):
    """A workload that records more than metrics with a successful run (a Google Benchmark
    binary: which of its benchmarks failed), stored in the run's details."""

    def details(self, finished: Finished) -> dict[str, Any]: ...


def metric_directions(spec: WorkloadSpec) -> dict[str, str]:
    return {name: s.direction for name, s in spec.metrics.items() if s.direction is not None}
