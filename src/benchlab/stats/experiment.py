"""An experiment's stored runs turned into the analysis every report renders.

`Analysis.as_dict()` is the JSON report; the table, Markdown and CSV are
drawn from the same dict, so every number a person reads is one a machine
can read too.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchlab.measure.host import noise_warnings
from benchlab.stats.analysis import GeomeanRow, Row, Series, Settings, judge
from benchlab.store.db import ExperimentData, RunRecord

REPORT_SCHEMA = "benchlab.report/1"
NOISY_SPREAD = 0.03


@dataclass
class Analysis:
    experiment: dict[str, Any]
    settings: Settings
    variants: list[str]
    rows: list[Row]
    geomean: list[GeomeanRow]
    runs: list[RunRecord]
    warnings: list[str] = field(default_factory=list)

    @property
    def failed_runs(self) -> list[RunRecord]:
        return [r for r in self.runs if r.status != "ok"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": REPORT_SCHEMA,
            "experiment": self.experiment,
            "baseline": self.settings.baseline,
            "variants": self.variants,
            "alpha": self.settings.alpha,
            "margin": self.settings.margin,
            "correction": self.settings.correction,
            "rows": [r.as_dict() for r in self.rows],
            "geomean": [g.as_dict() for g in self.geomean],
            "failed_runs": [_run_dict(r, values=False) for r in self.failed_runs],
            "warnings": self.warnings,
            "runs": [_run_dict(r, values=True) for r in self.runs],
        }


def _run_dict(run: RunRecord, *, values: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "workload": run.workload, "variant": run.variant, "block": run.block, "warmup": run.warmup,
        "host": run.host_id, "status": run.status, "exit_code": run.exit_code, "message": run.message,
        "started_at": run.started_at, "ended_at": run.ended_at,
    }  # fmt: skip
    if values:
        out["metrics"] = run.values
    else:
        out["stderr_tail"] = run.stderr_tail
    return out


def settings_from_spec(spec: dict[str, Any]) -> Settings:
    variants = spec["variants"]
    margins = {
        (w["name"], metric): s["margin"]
        for w in spec["workloads"]
        for metric, s in (w.get("metrics") or {}).items()
        if s.get("margin") is not None
    }
    return Settings(
        baseline=spec.get("baseline") or variants[0]["name"],
        alpha=spec.get("alpha", 0.05),
        correction=spec.get("correction", "bh"),
        margin=spec.get("margin", 0.01),
        margins=margins,
    )


def build_series(data: ExperimentData) -> tuple[list[Series], list[str]]:
    """Sample values by (workload, metric); warm-ups, failures and other workload versions left out."""
    values: dict[tuple[str, str], dict[str, dict[tuple[int, int], float]]] = defaultdict(lambda: defaultdict(dict))
    skipped_versions = 0
    for run in data.runs:
        if run.warmup or run.status != "ok":
            continue
        if run.workload_version != data.experiment.workload_versions.get(run.workload):
            skipped_versions += 1
            continue
        for name, value in run.values.items():
            values[(run.workload, name)][run.variant][(run.host_id, run.block)] = value
    series = []
    for (workload, metric), by_variant in values.items():
        unit, direction = data.metric_info.get((workload, metric), ("", "none"))
        series.append(Series(workload, metric, unit, direction, {v: dict(k) for v, k in by_variant.items()}))
    warnings = [f"{skipped_versions} run(s) of another workload version were left out"] if skipped_versions else []
    return series, warnings


def _spread_warnings(series: list[Series], baseline: str) -> list[str]:
    out = []
    for s in series:
        if s.direction == "none" or s.metric not in ("wall", "real_time", "cpu_time", "items_per_second"):
            continue
        x = np.array(list(s.values.get(baseline, {}).values()), dtype=float)
        if len(x) < 3 or np.median(x) <= 0:
            continue
        spread = 1.4826 * float(np.median(np.abs(x - np.median(x)))) / float(np.median(x))
        if spread > NOISY_SPREAD:
            out.append(f"{s.workload}/{s.metric}: run-to-run spread {spread:.1%} (robust CV) on the baseline")
    return out


def analyze(data: ExperimentData) -> Analysis:
    spec = data.experiment.spec
    settings = settings_from_spec(spec)
    variants = list(data.experiment.variant_ids)
    series, warnings = build_series(data)
    series.sort(key=lambda s: ([w["name"] for w in spec["workloads"]].index(s.workload) if s.workload in
                               data.experiment.workload_ids else math.inf, s.metric))  # fmt: skip
    rows, geomean = judge(series, variants, settings)
    failed = [r for r in data.runs if r.status != "ok"]
    if failed:
        warnings.append(f"{len(failed)} run(s) failed; they are not samples (see failed_runs)")
    warnings += _spread_warnings(series, settings.baseline)
    for host_id, fp in data.hosts.items():
        for text, fix in noise_warnings(fp, live=False):
            warnings.append(f"host {host_id}: {text} ({fix})")
    experiment = {
        "id": data.experiment.id,
        "name": data.experiment.name,
        "created_at": data.experiment.created_at,
        "spec": spec,
        "hosts": {str(k): v for k, v in data.hosts.items()},
        "workload_versions": data.experiment.workload_versions,
    }
    return Analysis(experiment, settings, variants, rows, geomean, data.runs, warnings)
