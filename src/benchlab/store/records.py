"""What the store hands out and takes in: plain typed records, no database in them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from benchlab.metrics import Metric

if TYPE_CHECKING:  # numpy's arrays are only named here: `benchlab list` reads no columns
    import numpy as np

    from benchlab.spec.models import ExperimentSpec

# A Google Benchmark binary (workload kind "gbench") can lose a benchmark inside a run that
# succeeds (SkipWithError): the run's details name those under this key, written with
# json.dumps, so that the store finds such runs by their text.
FAILED_BENCHMARKS = "failed_benchmarks"
BENCHMARK_BINARY = "gbench"


@dataclass(frozen=True)
class ExperimentRecord:
    """An experiment as stored. `spec` is its stored spec read once (`spec.stored.read_stored_spec`:
    of any version, migrated to the current shape, validated); `spec_document` is that spec's JSON
    object exactly as stored, what `spec_hash` is the digest of, a bundle carries and `show` prints."""

    id: int
    name: str
    spec: ExperimentSpec
    spec_document: dict[str, Any]
    spec_hash: str
    created_at: float
    workload_ids: dict[str, int]
    workload_versions: dict[str, str]
    variant_ids: dict[str, int]


@dataclass(frozen=True, slots=True)
class NewRun:
    """A finished run to store, live or imported: the one shape `Store.record_run` and a
    bundle import both write through (`runs.RunWriter`)."""

    workload: str
    variant: str
    host_id: int
    block: int
    warmup: bool
    position: int
    status: str  # ok | failed | timeout
    started_at: float
    ended_at: float
    metrics: Sequence[Metric] = ()
    exit_code: int | None = None
    message: str | None = None
    stderr_tail: str | None = None
    details: Mapping[str, Any] | None = None  # what it ran under: allocator mapped, options in force
    uuid: str | None = None  # an imported run keeps the one it was exported with; a live run gets a new one


@dataclass(frozen=True, slots=True)
class ProfiledRun:
    """A profiled run, to store or as stored: `profile` is its stacks as `stacks.encode` wrote
    them (None where it failed), `wall_s` its wall time with the sampler running."""

    workload: str
    variant: str
    host_id: int
    block: int
    position: int
    status: str  # ok | failed | timeout
    started_at: float
    ended_at: float
    wall_s: float | None = None
    message: str | None = None
    profile: bytes | None = None
    uuid: str | None = None


@dataclass(slots=True)
class RunRecord:
    """One stored run, whole, as a report lists it and a bundle carries it. Built by place
    (store/reading.py): a new field goes in its place there too."""

    id: int
    workload: str
    variant: str
    host_id: int
    block: int
    warmup: bool
    position: int
    status: str
    exit_code: int | None
    message: str | None
    stderr_tail: str | None
    started_at: float
    ended_at: float
    current_version: bool  # ran the experiment's version of its workload (imports may bring others)
    details: dict[str, Any] | None = None  # what it ran under: allocator mapped, options in force


@dataclass
class RunTable:
    """Every stored run of an experiment as parallel arrays, in the order stored: what judging
    100,000 runs needs of each, without an object per run (the whole record of a run is in
    `ExperimentData.records` where a report names it)."""

    ids: np.ndarray  # int64
    workload: np.ndarray  # int64: place in `workloads`
    variant: np.ndarray  # int64: place in `variants`
    host_id: np.ndarray  # int64
    block: np.ndarray  # int64
    warmup: np.ndarray  # bool
    ok: np.ndarray  # bool: its status is "ok"
    current: np.ndarray  # bool: ran the experiment's version of its workload (imports may bring others)
    workloads: list[str]
    variants: list[str]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class MetricColumns:
    """Every metric value of an experiment as parallel arrays: one entry per (run, metric)."""

    run_ids: np.ndarray  # int64
    name_codes: np.ndarray  # int32, index into names
    values: np.ndarray  # float64
    names: list[str]


@dataclass(frozen=True)
class Calibration:
    """What `benchlab calibrate` found for one workload on one host: the key is its version and
    the options its version does not cover (`analysis.calibration.calibration_key`)."""

    host_id: int
    workload_key: str
    metric: str
    spread: float | None
    experiments: int
    false_verdicts: int
    blocks: int
    created_at: float

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class ExperimentData:
    """Everything stored about one experiment."""

    experiment: ExperimentRecord
    runs: RunTable
    records: list[RunRecord]  # whole, in stored order: every run if `every_record`, else those a report names one by one
    metrics: MetricColumns
    metric_info: dict[tuple[str, str], tuple[str, str]]  # (workload, metric) -> (unit, direction)
    hosts: dict[int, dict[str, Any]]
    calibrations: list[Calibration] = field(default_factory=list)  # of its hosts and workload versions
    every_record: bool = False  # else `records` holds the runs that failed and those a benchmark failed inside
    profiled: list[ProfiledRun] = field(default_factory=list)  # the profiled runs, apart from `runs`

    def run_values(self) -> dict[int, dict[str, float]]:
        """Raw values per run id, for the JSON report and bundles."""
        out: dict[int, dict[str, float]] = {run_id: {} for run_id in cast(list[int], self.runs.ids.tolist())}
        names = self.metrics.names
        run_ids = cast(list[int], self.metrics.run_ids.tolist())  # numpy types tolist() by the array's rank, not its shape
        codes = cast(list[int], self.metrics.name_codes.tolist())
        for run_id, code, value in zip(run_ids, codes, cast(list[float], self.metrics.values.tolist()), strict=True):
            out[run_id][names[code]] = value
        return out
