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

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import TypeAdapter, ValidationError

from benchlab.report_model import Report, Run
from benchlab.workloads.probe import HISTOGRAM_BUCKETS, HISTOGRAM_PER_OCTAVE, HistogramsOf

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
    text = json.dumps(
        {"schema": SCHEMA, "report": report.document(kept), "thinning": {**thinning.__dict__, "note": thinning.note()}},
        separators=(",", ":"),
    )
    return text.translate(SCRIPT_SAFE)


@dataclass
class Summed:
    """One benchmark entry's latency histograms added up per variant: `counts[v, k]` samples of
    variant v in bucket k of the probe's grid, from `runs[v]` runs."""

    counts: np.ndarray
    runs: np.ndarray


@dataclass
class WorkloadRuns:
    """One workload's successful, timed runs (no warm-up) as columns, for its plots: the variant
    as an index into the report's variants, the block, the start (seconds since the experiment's
    first run; NaN where unknown), each metric's values (NaN where a run lacks it), and the
    latency histograms its runs keep (IPC workloads), summed per entry, with how many runs
    have none (stored before the probe sent them)."""

    workload: str
    variant: np.ndarray
    block: np.ndarray
    started: np.ndarray
    values: dict[str, np.ndarray] = field(default_factory=dict)
    histograms: dict[str, Summed] = field(default_factory=dict)
    without_histograms: int = 0


Gathered = dict[str, tuple[list[int], list[Any], list[Any]]]  # entry -> variant, first bucket, counts of each run
ENTRIES = TypeAdapter(HistogramsOf)  # a run's `{entry: {first, counts}}`, checked as the probe's are


def _kept(run: Run) -> Any:
    """A run's histograms as stored (`{entry: {first, counts}}`), unchecked; None without, or
    counted on a grid other than the one this page adds up (a newer probe's)."""
    details = run["details"]
    kept = details.get("histograms") if isinstance(details, dict) else None
    on_grid = isinstance(kept, dict) and kept.get("per_octave") == HISTOGRAM_PER_OCTAVE and kept.get("unit") == "ns"
    return kept.get("of") if on_grid else None  # type: ignore[union-attr]


def _checked(kept: Any) -> dict[str, Any] | None:
    """The same checked by the probe's own model (`HistogramsOf`), None where it fails: the slow
    way, taken only when the quick one met a value no probe writes (a bundle edited by hand)."""
    try:
        of = ENTRIES.validate_python(kept)
    except ValidationError:
        return None
    return {name: h.model_dump() for name, h in of.items()} or None


def _gathered(kept: list[Any], variant: list[int]) -> tuple[Gathered, int]:
    """Each entry's histograms, run by run, and the number of runs without any."""
    gathered: Gathered = {}
    without = 0
    for of, v in zip(kept, variant, strict=True):
        if not of:
            without += 1
            continue
        for name, histogram in of.items():
            who, firsts, counts = gathered.setdefault(name, ([], [], []))
            who.append(v)
            firsts.append(histogram["first"])
            counts.append(histogram["counts"])
    return gathered, without


def _added(who: list[int], firsts: list[Any], counts: list[Any], variants: int) -> Summed | None:
    """One entry's histograms added per variant in one `bincount` over all their buckets; None
    where a value is not a count on the grid."""
    try:
        lengths = np.fromiter(map(len, counts), dtype=np.int64, count=len(counts))
        flat = np.fromiter(itertools.chain.from_iterable(counts), dtype=np.int64, count=int(lengths.sum()))
        start = np.fromiter(firsts, dtype=np.int64, count=len(firsts))
    except (TypeError, ValueError, OverflowError):
        return None
    if (start < 0).any() or (start + lengths > HISTOGRAM_BUCKETS).any() or (flat < 0).any():
        return None
    offset = np.repeat(np.cumsum(lengths) - lengths, lengths)
    bucket: np.ndarray = np.repeat(start, lengths) + np.arange(len(flat)) - offset
    key = np.repeat(np.asarray(who, dtype=np.int64), lengths) * HISTOGRAM_BUCKETS + bucket
    total = np.bincount(key, weights=flat, minlength=variants * HISTOGRAM_BUCKETS)
    return Summed(total.reshape(variants, HISTOGRAM_BUCKETS), np.bincount(who, minlength=variants))


def summed(runs: list[Run], variant: np.ndarray, variants: int) -> tuple[dict[str, Summed], int]:
    """Every entry's histograms added up per variant, and the runs without any. One Python pass
    gathers the runs' count lists and numpy adds them, so 100,000 runs of a few dozen buckets
    each cost a fraction of a second."""
    kept, of_variant = [_kept(r) for r in runs], list(map(int, variant))
    try:
        gathered, without = _gathered(kept, of_variant)
        added = {name: _added(*columns, variants) for name, columns in gathered.items()}
    except (AttributeError, TypeError, KeyError):
        added = {"": None}
    if any(a is None for a in added.values()):
        gathered, without = _gathered([_checked(of) for of in kept], of_variant)
        added = {name: _added(*columns, variants) for name, columns in gathered.items()}
    return {name: a for name, a in added.items() if a is not None}, without


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
        variant = np.array([index[r["variant"]] for r in runs], dtype=np.int64)
        histograms, without = summed(runs, variant, len(index))
        out[workload] = WorkloadRuns(
            workload=workload,
            variant=variant,
            block=np.array([r["block"] for r in runs], dtype=np.int64),
            started=np.array([math.nan if r["started_at"] is None else r["started_at"] - first for r in runs], dtype=float),
            values={m: table[:, j] for j, m in enumerate(names)},
            histograms=histograms,
            without_histograms=without,
        )
    return out
