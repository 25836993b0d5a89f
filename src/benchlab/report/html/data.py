"""The page's own data: the report model, with its runs, embedded as JSON in the page
(`<script type="application/json" id="benchlab-data">`), and the runs as columns for the plots.

The embedded document is `{"schema": "benchlab.html/1", "report": ..., "thinning": ...}`:
`report` is the JSON report (`--format json`, schema `benchlab.report/2`) with each run's
`details` left out (an app cycle keeps every launch there; `--format json` has them), so any
reader of the JSON report reads the page's data too. Above RUNS_BYTES_MAX of runs, only every
k-th block is kept, whole, so that the kept runs stay paired by block; `thinning` says how
many runs there are, how many are embedded and which blocks, and the page says it in words.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchlab.stats.report_model import Report, Run

SCHEMA = "benchlab.html/1"
RUNS_BYTES_MAX = 2_000_000  # the embedded runs' JSON: above it, every k-th block is kept (whole)
SAMPLE_RUNS = 200  # runs serialised to estimate the size of all of them
SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


@dataclass(frozen=True)
class Thinning:
    """How many runs the page embeds: all of them (`every` 1), or the blocks that are multiples of `every`."""

    runs: int
    embedded: int
    every: int

    def note(self) -> str:
        if self.every == 1:
            return f"all {self.runs:,} runs are embedded in this page (JSON, id benchlab-data), without their details"
        return (
            f"{self.embedded:,} of {self.runs:,} runs are embedded in this page (JSON, id benchlab-data): one block "
            f"in {self.every} (blocks 0, {self.every}, {2 * self.every}, ...), whole, to keep the page's data under "
            f"{RUNS_BYTES_MAX / 1e6:g} MB; the plots and every number above use all the runs (`--format json` writes "
            "every run)"
        )


def _slim(run: Run) -> Run:
    return {**run, "details": None}


def thinning_of(runs: list[Run]) -> Thinning:
    """Every run, or every k-th block: k is the estimated size of the runs over RUNS_BYTES_MAX."""
    if not runs:
        return Thinning(0, 0, 1)
    step = max(1, len(runs) // SAMPLE_RUNS)
    sample = [_slim(r) for r in runs[::step]]
    estimate = len(json.dumps(sample)) / len(sample) * len(runs)
    every = max(1, math.ceil(estimate / RUNS_BYTES_MAX))
    embedded = len(runs) if every == 1 else sum(1 for r in runs if r["block"] % every == 0)
    return Thinning(len(runs), embedded, every)


def script(report: Report, thinning: Thinning) -> str:
    """The JSON document as the text of a script element: `<`, `>` and `&` written as JSON escapes,
    so that no stored text (`</script>`, `<!--`) can end the element or open markup; every other
    control and non-ASCII character is escaped by json.dumps itself."""
    kept = [_slim(r) for r in report.runs if thinning.every == 1 or r["block"] % thinning.every == 0]
    document: dict[str, Any] = report.model_dump(mode="json", by_alias=True, exclude={"runs"})
    document["runs"] = kept
    text = json.dumps(
        {"schema": SCHEMA, "report": document, "thinning": {**thinning.__dict__, "note": thinning.note()}},
        separators=(",", ":"),
    )
    return text.translate(SCRIPT_SAFE)


@dataclass
class WorkloadRuns:
    """One workload's successful, timed runs (no warm-up) as columns, for its plots: the variant
    as an index into the report's variants, the block, the start (seconds since the experiment's
    first run; NaN where unknown) and each metric's values (NaN where a run lacks it)."""

    workload: str
    variant: np.ndarray
    block: np.ndarray
    started: np.ndarray
    values: dict[str, np.ndarray] = field(default_factory=dict)


def by_workload(report: Report) -> dict[str, WorkloadRuns]:
    """The report's runs grouped by workload as columns, start times in seconds since the
    experiment's first run: one pass over the runs, and each run's values taken as one list
    where it has the workload's metrics in the usual order, so that 100,000 runs cost a fraction
    of a second."""
    index = {v: i for i, v in enumerate(report.variants)}
    first = min((r["started_at"] for r in report.runs if r["started_at"] is not None), default=0.0)
    grouped: dict[str, list[Run]] = {}
    for run in report.runs:
        if run["status"] == "ok" and not run["warmup"] and run["variant"] in index:
            grouped.setdefault(run["workload"], []).append(run)
    out = {}
    for workload, runs in grouped.items():
        names = tuple(dict.fromkeys(m for r in runs for m in r["metrics"]))
        rows = [list(m.values()) if tuple(m) == names else [m.get(n, math.nan) for n in names]
                for m in (r["metrics"] for r in runs)]  # fmt: skip
        table = np.array(rows, dtype=float).reshape(len(runs), len(names))
        out[workload] = WorkloadRuns(
            workload=workload,
            variant=np.array([index[r["variant"]] for r in runs], dtype=np.int64),
            block=np.array([r["block"] for r in runs], dtype=np.int64),
            started=np.array([math.nan if r["started_at"] is None else r["started_at"] - first for r in runs], dtype=float),
            values={m: table[:, j] for j, m in enumerate(names)},
        )
    return out
