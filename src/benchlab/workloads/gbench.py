"""Any Google Benchmark binary as a workload.

A benchmark of the binary that reports an error (`SkipWithError`) loses only its own metrics:
the others are kept and the failure is recorded with the run (`details["failed_benchmarks"]`),
so one broken benchmark of a third-party binary does not cost every comparison.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlab.errors import SpecError
from benchlab.measure.process import Finished
from benchlab.metrics import Metric
from benchlab.spec.models import WorkloadSpec
from benchlab.store import FAILED_BENCHMARKS
from benchlab.workloads.base import metric_directions
from benchlab.workloads.command import find_executable
from benchlab.workloads.gbench_json import benchmark_results, parse_document


def file_digest(path: str) -> str:
    """A rebuilt binary is different work: its content hash is the workload version."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


@dataclass
class GbenchWorkload:
    spec: WorkloadSpec
    binary: str
    digest: str

    @classmethod
    def resolve(cls, spec: WorkloadSpec, where: str) -> GbenchWorkload:
        binary = find_executable(str(spec.gbench), f"{where}.gbench", spec.cwd)
        for arg in spec.args:
            if arg.startswith("--benchmark_format") or arg.startswith("--benchmark_out"):
                raise SpecError("benchlab sets the output format itself; drop this argument", where=f"{where}.args")
        return cls(spec, binary, file_digest(binary))

    @property
    def version(self) -> str:
        return f"gbench:{Path(self.binary).name}:{self.digest}:{' '.join(self.spec.args)}"

    def argv(self) -> list[str]:
        return [self.binary, *self.spec.args, "--benchmark_format=json"]

    def _results(self, finished: Finished) -> tuple[list[Metric], dict[str, str]]:
        return benchmark_results(parse_document(finished.stdout), metric_directions(self.spec))  # type: ignore[arg-type]

    def metrics(self, finished: Finished) -> list[Metric]:
        return self._results(finished)[0]

    def details(self, finished: Finished) -> dict[str, Any]:
        """The benchmarks that failed in this run, each with its message (none: nothing to record)."""
        failed = self._results(finished)[1]
        return {FAILED_BENCHMARKS: failed} if failed else {}
