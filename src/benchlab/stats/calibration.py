"""Per-host calibration: what A/A experiments of a workload say about this machine.

`benchlab calibrate` runs batches of A/A experiments (two identical variants); each one
gives, per workload, whether any row came out better or worse (a false verdict) and the
run-to-run spread of its first primary metric. Stored per host and workload version, they
are shown beside later verdicts of that workload ("this host: spread 1.2%, A/A 1 of 20"),
so a reader can weigh a verdict against how this machine behaves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchlab.stats.analysis import Row, json_number
from benchlab.stats.families import PRIMARY
from benchlab.store.db import Calibration

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


def summarise(per_experiment: list[list[Outcome]]) -> dict[str, tuple[str, float, int, int]]:
    """workload -> (metric, median spread, experiments, false verdicts)."""
    by_workload: dict[str, list[Outcome]] = {}
    for batch in per_experiment:
        for o in batch:
            by_workload.setdefault(o.workload, []).append(o)
    return {
        w: (found[0].metric, float(np.nanmedian([o.spread for o in found])), len(found), sum(o.false_verdict for o in found))
        for w, found in by_workload.items()
    }


def calibration_report(calibrations: list[Calibration], versions: dict[str, str], host_id: int | None) -> dict[str, Any]:
    """For the report: workload -> the latest calibration of its version on the experiment's host."""
    by_version = {c.workload_version: c for c in calibrations if c.host_id == host_id}
    return {
        w: {**by_version[v].as_dict(), "spread": json_number(by_version[v].spread)}
        for w, v in versions.items()
        if v in by_version
    }
