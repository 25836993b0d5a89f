"""The sweep part of an analysis: which variant stands for which swept value, and per
judged metric the line fitted through the changes (see `stats.fit`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchlab.stats.fit import as_fraction, fit_line
from benchlab.stats.judge import Series, Settings
from benchlab.stats.report_model import Sweep, SweepFit, number, pair


def _x(value: float, mode: str) -> float:
    """The regressor: the value, or its reciprocal, with 0 standing for 'never' (1 in 0)."""
    if mode == "reciprocal":
        return 1.0 / value if value else 0.0
    return value


def sweep_report(spec: dict[str, Any], fit: str, series: list[Series], settings: Settings) -> tuple[Sweep | None, list[str]]:
    """The sweep of a stored spec, if its variants are sweep points; `fit` is the spec's fit setting."""
    points = {v["name"]: v.get("sweep") or {} for v in spec["variants"]}
    swept = {name: p for name, p in points.items() if p}
    if not swept:
        return None, []
    fields = list(dict.fromkeys(f for p in swept.values() for f in p))
    mode = fit
    warnings: list[str] = []
    fits = []
    if mode != "none":
        numeric = {
            name: float(p[fields[0]]) for name, p in swept.items()
            if isinstance(p.get(fields[0]), int | float) and not isinstance(p.get(fields[0]), bool)
        }  # fmt: skip
        if len(fields) != 1:
            warnings.append("the sweep has two parameters: no line is fitted (sweep one to fit)")
        elif settings.baseline in swept:
            warnings.append(f"the baseline '{settings.baseline}' is a sweep point: no line is fitted (name a reference)")
        elif len(numeric) < 2:
            warnings.append("fewer than two numeric sweep values: no line is fitted")
        else:
            fits = [f for s in series if s.direction != "none" and (f := _fit(s, settings.baseline, numeric, mode))]
    return Sweep(parameters=fields, fit=mode, reference=settings.baseline, points=swept, fits=fits), warnings


def _fit(s: Series, reference: str, numeric: dict[str, float], mode: str) -> SweepFit | None:
    parts = [(s.of(reference), 0.0, 0.0)] + [(s.of(v), 1.0, _x(x, mode)) for v, x in numeric.items()]
    keys = np.concatenate([k for (k, _), _, _ in parts])
    values = np.concatenate([v for (_, v), _, _ in parts])
    if len(values) == 0 or values.min() <= 0:
        return None
    swept = np.concatenate([np.full(len(k), flag) for (k, _), flag, _ in parts])
    x = np.concatenate([np.full(len(k), xv) for (k, _), _, xv in parts])
    line = fit_line(keys, swept, x, np.log(values))
    if line is None:
        return None
    return SweepFit(
        workload=s.workload, metric=s.metric, direction=s.direction, x=mode, intercept=number(as_fraction(line.intercept)),
        intercept_ci=pair((as_fraction(line.intercept_ci[0]), as_fraction(line.intercept_ci[1]))),
        slope=number(line.slope), slope_ci=pair(line.slope_ci), n=line.n, blocks=line.blocks,
    )  # fmt: skip
