"""The sweep part of an analysis: which variant stands for which swept value, and per
judged metric the models fitted through the changes (see `stats.fit`): whether the spec's line
describes the points, which model does, and the change at 0 a reader should take (for a shim
swept over 1 in N, the cost of merely being installed)."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from benchlab.errors import SpecError
from benchlab.report_model import MeasuredPoint, MetricRow, Sweep, SweepFit, SweepModel, number, pair
from benchlab.spec.variant_fields import set_field
from benchlab.stats.fit import ADDITIVE, LINE, PIECEWISE, Fits, LineFit, as_fraction, fit_models
from benchlab.stats.judge import Series, Settings

Judged = Callable[[str, str, str], MetricRow | None]  # (workload, metric, variant) -> its judged row


def _x(value: float, mode: str) -> float:
    """The regressor: the value, or its reciprocal, with 0 standing for 'never' (1 in 0)."""
    if mode == "reciprocal":
        return 1.0 / value if value else 0.0
    return value


def sweep_report(
    spec: dict[str, Any], fit: str, series: list[Series], settings: Settings, judged: Judged | None = None
) -> tuple[Sweep | None, list[str]]:
    """The sweep of a stored spec, if its variants are sweep points; `fit` is the spec's fit setting;
    `judged` finds the judged row of a variant measured at 0 (what the fit's intercept is set beside)."""
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
            zero = zero_variant(spec, fields[0], numeric, settings.baseline)
            for s in series:
                if s.direction == "none":
                    continue
                found = _fit(s, settings.baseline, numeric, mode)
                if found is not None:
                    measured = judged(s.workload, s.metric, zero) if judged and zero else None
                    fits.append(_exported(s, mode, found, measured))
            warnings += fit_warnings(fits, fields[0])
    return Sweep(parameters=fields, fit=mode, reference=settings.baseline, points=swept, fits=fits), warnings


def zero_variant(spec: dict[str, Any], field: str, numeric: dict[str, float], reference: str) -> str | None:
    """The variant measured where the swept value is 0: a sweep point at 0, or a variant of the
    spec's own that is a swept variant with `field` set to 0 (the shim study's `noop`:
    `shim = { sampling = 0 }`, installed and never sampling)."""
    at_zero = [name for name, value in numeric.items() if value == 0]
    if at_zero:
        return at_zero[0]
    variants = {v["name"]: v for v in spec["variants"]}

    def bare(v: dict[str, Any]) -> dict[str, Any]:
        return {k: item for k, item in v.items() if k not in ("name", "sweep")}

    for zero in (0, "0"):  # a number, or as an environment variable holds it
        like = copy.deepcopy(variants[next(iter(numeric))])
        try:
            set_field(like, field, zero, where="sweep")
        except SpecError:
            return None
        found = [n for n, v in variants.items() if n != reference and n not in numeric and bare(v) == bare(like)]
        if found:
            return found[0]
    return None


def _fit(s: Series, reference: str, numeric: dict[str, float], mode: str) -> Fits | None:
    parts = [(s.of(reference), 0.0, 0.0)] + [(s.of(v), 1.0, value) for v, value in numeric.items()]
    keys = np.concatenate([k for (k, _), _, _ in parts])
    values = np.concatenate([v for (_, v), _, _ in parts])
    if len(values) == 0 or values.min() <= 0:
        return None
    swept = np.concatenate([np.full(len(k), flag) for (k, _), flag, _ in parts])
    raw = np.concatenate([np.full(len(k), value) for (k, _), _, value in parts])
    x = np.array([_x(float(v), mode) for v in raw]) * swept
    return fit_models(keys, swept, x, raw, np.log(values))


def _fraction_pair(p: tuple[float, float] | None) -> tuple[float | None, float | None]:
    if p is None:
        return None, None
    return pair((as_fraction(p[0]), as_fraction(p[1])))


def _model(m: LineFit) -> SweepModel:
    return SweepModel(
        model=m.model, intercept=number(as_fraction(m.intercept)), intercept_ci=_fraction_pair(m.intercept_ci),
        slope=number(m.slope), slope_ci=pair(m.slope_ci), knot=number(m.knot), slope_after=number(m.slope_after),
        slope_after_ci=pair(m.slope_after_ci) if m.slope_after_ci else (None, None), parameters=m.parameters,
        aic=number(m.aic), lack_of_fit_p=number(m.lack_of_fit_p), fits=m.fits,
    )  # fmt: skip


def _exported(s: Series, mode: str, fits: Fits, row: MetricRow | None) -> SweepFit:
    line = fits.line
    # the measured point at its unadjusted 95%, as the line's intercept is: the fit table compares them
    measured = (
        MeasuredPoint(variant=row.variant, change=row.change, change_ci=row.change_ci95, verdict=row.verdict) if row else None
    )
    agrees = None if row is None else _agrees(line, row)
    at_0: tuple[float | None, tuple[float | None, float | None], str | None] = (None, (None, None), None)
    if line.fits and (row is None or agrees is True):
        at_0 = (number(as_fraction(line.intercept)), _fraction_pair(line.intercept_ci), LINE)
    elif measured is not None and measured.change is not None:
        at_0 = (measured.change, measured.change_ci, f"measured ({measured.variant})")
    elif fits.chosen is not None and fits.chosen.model in (PIECEWISE, ADDITIVE):
        at_0 = (number(as_fraction(fits.chosen.intercept)), _fraction_pair(fits.chosen.intercept_ci), fits.chosen.model)
    return SweepFit(
        workload=s.workload, metric=s.metric, direction=s.direction, x=mode, intercept=number(as_fraction(line.intercept)),
        intercept_ci=_fraction_pair(line.intercept_ci), slope=number(line.slope), slope_ci=pair(line.slope_ci), n=line.n,
        blocks=line.blocks, lack_of_fit_p=number(line.lack_of_fit_p), model=fits.chosen.model if fits.chosen else "none",
        models=[_model(m) for m in fits.models], measured_at_0=measured, change_at_0=at_0[0], change_at_0_ci=at_0[1],
        change_at_0_from=at_0[2], measured_agrees=agrees,
    )  # fmt: skip


Z95 = 1.959963984540054  # the normal's 97.5% point


def _agrees(line: LineFit, row: MetricRow) -> bool | None:
    """Whether the line's change at 0 and the one measured there agree within their intervals:
    a z test of the difference of the two log changes at the 5% level, each standard error read
    from its unadjusted 95% interval (the row's shown interval is at its family's corrected
    level, wider). Both are against one reference, so they covary positively; leaving that out
    overstates the difference's spread, which makes the test conservative (it warns less often
    than 5% where they agree). None where they cannot be compared (a change that is a raw shift,
    not a ratio, or a point without an interval): the line is then not read at 0, since nothing
    shows it agrees with what was measured there."""
    lo, hi = row.change_ci95
    if row.change is None or lo is None or hi is None or not row.log_scale or lo <= -1 or row.change <= -1:
        return None
    spread = math.hypot((line.intercept_ci[1] - line.intercept_ci[0]) / (2 * Z95), (math.log1p(hi) - math.log1p(lo)) / (2 * Z95))
    return not (spread > 0 and abs(line.intercept - math.log1p(row.change)) / spread > Z95)


MAX_FIT_LINES = 5  # more warned fits than this read as one line per workload


def fit_warnings(fits: list[SweepFit], field: str) -> list[str]:
    """A line per fit that does not describe its points or disagrees with the point measured at 0
    (`lack_of_fit_warning`); more than MAX_FIT_LINES of them, one line per workload naming its
    metrics, the fit table holding each one's change at 0 read."""
    warned = [(f, line) for f in fits if (line := lack_of_fit_warning(f, field))]
    if len(warned) <= MAX_FIT_LINES:
        return [line for _, line in warned]
    by_workload: dict[str, list[SweepFit]] = {}
    for f, _ in warned:
        by_workload.setdefault(f.workload, []).append(f)
    return [
        f"{workload}: the line in {'1/' if found[0].x == 'reciprocal' else ''}{field} does not describe the points, or "
        f"its change at 0 disagrees with (or cannot be compared with) the one measured there, for "
        + ", ".join(f"{f.metric} ({_why(f)})" for f in found)
        + ": their change at 0 is read elsewhere (the fit table's 'read at 0', in --view sweep)"
        for workload, found in by_workload.items()
    ]


def _why(f: SweepFit) -> str:
    if not f.line_fits:
        return f"lack-of-fit p = {f.lack_of_fit_p:.2g}"
    return f"{_percent(f.intercept)} against {_percent(f.measured_at_0.change if f.measured_at_0 else None)} measured"


def lack_of_fit_warning(fit: SweepFit, field: str) -> str | None:
    """One line where the line does not describe the points (its test, the model read instead,
    and the change at 0 to read: the measured one, where a variant was measured there), or where
    its change at 0 disagrees with the one measured there, or cannot be compared with it (so that
    a reader of the measured change beside a fitting line knows why it was read)."""
    if fit.line_fits:
        point = fit.measured_at_0
        if fit.measured_agrees is True or point is None:
            return None
        how = "disagrees with" if fit.measured_agrees is False else "cannot be compared with (no interval, or a shift)"
        return (
            f"{fit.workload} {fit.metric}: the line's change at 0 ({_percent(fit.intercept)}) {how} the one "
            f"measured there ({point.variant}: {_percent(point.change)}), which is read instead"
        )
    text = (
        f"{fit.workload} {fit.metric}: the line in {'1/' if fit.x == 'reciprocal' else ''}{field} does not describe the "
        f"points (lack-of-fit p = {fit.lack_of_fit_p:.2g}), so its change at 0 "
        f"({_percent(fit.intercept)}) is not the change at 0"
    )
    if fit.model != "none":
        text += f"; the {fit.model} model fits better"
    else:
        text += "; no model tried describes them"
    if fit.change_at_0_from is not None and fit.change_at_0_from != LINE:
        text += f"; change at 0 {_percent(fit.change_at_0)}, {fit.change_at_0_from}"
    return text


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1%}"
