"""Per-host calibration: what A/A experiments of a workload say about this machine.

`benchlab calibrate` runs batches of A/A experiments (two identical variants); each one
gives, per workload, whether any row came out better or worse (a false verdict) and the
run-to-run spread of its first primary metric. Stored per host and workload version, they
are shown beside later verdicts of that workload ("this host: spread 1.2%, A/A 1 of 20"),
so a reader can weigh a verdict against how this machine behaves.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchlab.report_model import CalibrationNote, number
from benchlab.stats.families import PRIMARY
from benchlab.stats.judge import Row
from benchlab.store import Calibration

FALSE = ("better", "worse")


@dataclass(frozen=True)
class Outcome:
    """One A/A experiment's verdict on one workload."""

    workload: str
    metric: str
    spread: float  # per-run spread (CV) of the metric: the log ratios' sd / sqrt(2)
    false_verdict: bool


def outcomes(rows: list[Row]) -> list[Outcome]:
    found: dict[str, Outcome] = {}
    for row in rows:
        if row.family != PRIMARY or row.direction == "none" or row.estimate is None:
            continue
        if row.workload not in found:
            spread = row.estimate.spread / math.sqrt(2) if row.log_scale else math.nan
            found[row.workload] = Outcome(row.workload, row.metric, spread, False)
    for row in rows:
        if row.verdict in FALSE and row.workload in found:
            o = found[row.workload]
            found[row.workload] = Outcome(o.workload, o.metric, o.spread, True)
    return list(found.values())


def summarise(per_experiment: list[list[Outcome]]) -> dict[str, tuple[str, float | None, int, int]]:
    """workload -> (metric, median spread or None off the log scale, experiments, false verdicts)."""
    by_workload: dict[str, list[Outcome]] = {}
    for batch in per_experiment:
        for o in batch:
            by_workload.setdefault(o.workload, []).append(o)
    out: dict[str, tuple[str, float | None, int, int]] = {}
    for w, found in by_workload.items():
        spreads = [o.spread for o in found if not math.isnan(o.spread)]
        spread = float(np.median(spreads)) if spreads else None
        out[w] = (found[0].metric, spread, len(found), sum(o.false_verdict for o in found))
    return out


def calibration_key(workload: dict[str, Any], version: str) -> str:
    """What a calibration is stored under: the workload's version and, where the version does
    not already cover them, its options and arguments (a built-in's version is its code's, so
    `alloc.churn threads=2` and `threads=16` must not share one)."""
    extra = {k: workload.get(k) for k in ("options", "args") if workload.get(k)}
    if not extra:
        return version
    return f"{version}#{hashlib.sha256(json.dumps(extra, sort_keys=True).encode()).hexdigest()[:12]}"


def calibration_report(calibrations: list[Calibration], spec: dict[str, Any], versions: dict[str, str],
                       host_id: int | None) -> dict[str, CalibrationNote]:  # fmt: skip
    """For the report: workload -> the latest calibration of it on the experiment's main host."""
    by_key = {c.workload_key: c for c in calibrations if c.host_id == host_id}
    out = {}
    for w in spec.get("workloads", []):
        found = by_key.get(calibration_key(w, versions.get(w["name"], "")))
        if found is not None:
            out[w["name"]] = CalibrationNote(**{**found.as_dict(), "spread": number(found.spread)})
    return out
