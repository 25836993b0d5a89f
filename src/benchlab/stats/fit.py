"""The fit of a sweep: how a metric changes with the swept value, and whether it does so as
the model says.

Models, on the log scale (so coefficients are relative changes), one row per run:

    line       log y = block effect + a * [swept variant] + s * x + error
    log        log y = block effect + a * [swept variant] + s * ln(value) + error
    additive   log y = block effect + ln(1 + a * [swept variant] + s * x) + error
    piecewise  log y = block effect + a * [swept variant] + s * x + s2 * max(x - knot, 0) + error

where x is the swept value (or its reciprocal, for "1 in N" rates, 0 standing for "never")
for swept variants and 0 for the reference. The block effects absorb drift; `a` is the change at
x = 0 against the reference (for an allocator shim swept over its sampling rate, the cost of
merely being installed; in the log model the change at value 1, since ln 0 has no value) and `s`
the change per unit of x (of ln(value)). The additive model makes the change itself, not its
log, a line in x: a cost added per unit of x, as a shim's time per sampled free is (its `a` is
reported as ln(1 + a), so that every model's intercept reads alike). The piecewise model bends once, at the sweep point (an
interior one) that leaves the least squared error; its knot counts as a parameter. Each is
fitted by least squares after removing block means (the within estimator, equal to fitting a
dummy per block without building that matrix), with t intervals from its residual variance
(the piecewise model's given its knot).

Lack of fit: every model is nested in the one that gives each sweep point a mean of its own
(block effects kept), whose residuals are pure error: run-to-run noise no model of the points
can remove. The extra-sum-of-squares F test, (RSS_model - RSS_points) / (k - p) over
RSS_points / (n - blocks - k) with k sweep points and p parameters, is the classical
lack-of-fit test of a regression with replicates (the runs of each point, one per block). A
model fails where its p < LACK_OF_FIT_ALPHA; with as many parameters as points (two points
for a line) it cannot be tested.

The rule that picks the model a report reads (`choose`): the spec's own line when it passes (or
cannot be tested); otherwise, of the other models that pass, the one of lowest AIC
(n ln(RSS/n) + 2p, the block effects being common to all); otherwise none describes the
points, which the report says. Hand-written because it is a few lines of numpy; statsmodels
would add a large dependency for these models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

LEVEL = 0.95
LACK_OF_FIT_ALPHA = 0.05  # a model whose lack-of-fit p is below this does not describe the points
LINE, LOG, ADDITIVE, PIECEWISE = "line", "log", "additive", "piecewise"


@dataclass(frozen=True)
class LineFit:
    """One model fitted: coefficients on the log scale, with their 95% intervals."""

    model: str
    intercept: float  # log-scale change at x = 0 against the reference (log model: at value 1)
    intercept_ci: tuple[float, float]
    slope: float  # log-scale change per unit of x (log model: per unit of ln(value))
    slope_ci: tuple[float, float]
    n: int
    blocks: int
    parameters: int = 2
    rss: float = math.nan
    aic: float = math.nan
    lack_of_fit_p: float | None = None  # None: as many parameters as sweep points, no test
    knot: float | None = None  # piecewise: where the slope changes
    slope_after: float | None = None  # piecewise: the change of slope past the knot
    slope_after_ci: tuple[float, float] | None = None

    @property
    def fits(self) -> bool:
        """Whether the points are described: the test passed or could not be run."""
        return self.lack_of_fit_p is None or self.lack_of_fit_p >= LACK_OF_FIT_ALPHA


@dataclass(frozen=True)
class Fits:
    """Every model fitted to one metric's sweep, the spec's line first, and the one `choose` picked."""

    models: list[LineFit]
    chosen: LineFit | None

    @property
    def line(self) -> LineFit:
        return self.models[0]


@dataclass(frozen=True)
class _Points:
    """The runs with each block's mean removed, and which sweep point each swept run is at."""

    block: np.ndarray
    counts: np.ndarray
    swept: np.ndarray
    x: np.ndarray
    value: np.ndarray
    y: np.ndarray
    levels: np.ndarray  # the distinct x of the swept runs

    @property
    def blocks(self) -> int:
        return len(self.counts)

    def within(self, v: np.ndarray) -> np.ndarray:
        return v - (np.bincount(self.block, weights=v, minlength=self.blocks) / self.counts)[self.block]


def _points(keys: np.ndarray, swept: np.ndarray, x: np.ndarray, value: np.ndarray, y: np.ndarray) -> _Points | None:
    _, block = np.unique(keys, return_inverse=True)
    keep = np.bincount(block)[block] >= 2  # a block with one run says nothing once its mean is removed
    if not keep.any():
        return None
    _, block = np.unique(block[keep], return_inverse=True)
    flags = swept[keep].astype(float)
    xs = x[keep].astype(float)
    return _Points(block, np.bincount(block), flags, xs, value[keep].astype(float), y[keep], np.unique(xs[flags == 1]))


def _least_squares(points: _Points, columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, float, int] | None:
    """Coefficients, their covariance, the residual sum of squares and its degrees of freedom;
    None where the columns cannot be told apart or leave no residual."""
    design = np.column_stack([points.within(c) for c in columns])
    dof = len(points.y) - points.blocks - len(columns)
    if dof < 1 or np.linalg.matrix_rank(design) < len(columns):
        return None
    yw = points.within(points.y)
    coef, _, _, _ = np.linalg.lstsq(design, yw, rcond=None)
    resid = yw - design @ coef
    rss = float(resid @ resid)
    return coef, (rss / dof) * np.linalg.inv(design.T @ design), rss, dof


def _pure_error(points: _Points) -> tuple[float, int] | None:
    """RSS and its degrees of freedom of the model with a mean per sweep point (and block effects)."""
    columns = [(points.x == level) & (points.swept == 1) for level in points.levels]
    found = _least_squares(points, [c.astype(float) for c in columns])
    return None if found is None else (found[2], found[3])


def _interval(coef: float, var: float, dof: int) -> tuple[float, float]:
    t = float(special.stdtrit(dof, 0.5 + LEVEL / 2))  # scipy.stats.t.ppf's own function
    half = t * math.sqrt(max(var, 0.0))
    return coef - half, coef + half


def _lack_of_fit(rss: float, parameters: int, levels: int, pure: tuple[float, int] | None) -> float | None:
    """The lack-of-fit F test's p (see the module's docstring); None where it cannot be run."""
    extra = levels - parameters
    if pure is None or extra < 1:
        return None
    pure_rss, pure_dof = pure
    between = max(rss - pure_rss, 0.0) / extra
    if pure_rss > 0:
        return float(special.fdtrc(extra, pure_dof, between / (pure_rss / pure_dof)))  # scipy.stats.f.sf's own
    return 0.0 if between > 1e-12 * max(rss, 1.0) else 1.0  # noise-free points: a miss is a lack of fit


def _model(points: _Points, name: str, columns: list[np.ndarray], parameters: int, pure: tuple[float, int] | None,
           knot: float | None = None) -> LineFit | None:  # fmt: skip
    found = _least_squares(points, columns)
    if found is None:
        return None
    coef, cov, rss, dof = found
    n = len(points.y)
    lack_p = _lack_of_fit(rss, parameters, len(points.levels), pure)
    after = (float(coef[2]), _interval(float(coef[2]), float(cov[2, 2]), dof)) if len(coef) > 2 else (None, None)
    return LineFit(
        name, float(coef[0]), _interval(float(coef[0]), float(cov[0, 0]), dof), float(coef[1]),
        _interval(float(coef[1]), float(cov[1, 1]), dof), n, points.blocks, parameters, rss,
        n * math.log(max(rss, 1e-300) / n) + 2 * parameters, lack_p, knot, after[0], after[1],
    )  # fmt: skip


def fit_models(keys: np.ndarray, swept: np.ndarray, x: np.ndarray, value: np.ndarray, y: np.ndarray) -> Fits | None:
    """keys: each run's block; swept: 1 for swept variants, 0 for the reference; x: the regressor
    of the line (the value or its reciprocal, 0 for the reference); value: the swept value itself
    (for the log model); y: the log metric. None when the data cannot identify a line."""
    points = _points(keys, swept, x, value, y)
    if points is None:
        return None
    pure = _pure_error(points)
    line = _model(points, LINE, [points.swept, points.x], 2, pure)
    if line is None:
        return None
    models = [line]
    on_swept = points.value[points.swept == 1]
    if len(on_swept) and (on_swept > 0).all():
        logged = np.where(points.swept == 1, np.log(np.where(points.value > 0, points.value, 1.0)), 0.0)
        if (found := _model(points, LOG, [points.swept, logged], 2, pure)) is not None:
            models.append(found)
    if (added := _additive(points, line, pure)) is not None:
        models.append(added)
    bends = [
        m for knot in points.levels[1:-1]
        if (m := _model(points, PIECEWISE, [points.swept, points.x, np.maximum(points.x - knot, 0.0) * points.swept], 4,
                        pure, float(knot))) is not None
    ]  # fmt: skip
    if bends:
        models.append(min(bends, key=lambda m: m.rss))
    return Fits(models, choose(models))


def _additive(points: _Points, line: LineFit, pure: tuple[float, int] | None) -> LineFit | None:
    """The additive model: log y = block effect + ln(1 + a [swept] + s x), the change itself (not
    its log) a line in x, as where a cost is added per unit of x (a shim's time per sampled
    free). Nonlinear least squares from the line's estimates, intervals from the Jacobian;
    its intercept is reported as ln(1 + a), on the scale of the other models'."""
    ly = points.within(points.y)

    def shape(theta: np.ndarray) -> np.ndarray:
        return 1 + theta[0] * points.swept + theta[1] * points.x

    def residual(theta: np.ndarray) -> np.ndarray:
        inside = shape(theta)
        if (inside <= 0).any():
            return np.full(len(ly), 1e6)
        return ly - points.within(np.log(inside))

    start = np.array([math.expm1(line.intercept), math.expm1(line.slope)])
    from scipy import optimize  # 0.2-0.3 s to import: only a sweep with an additive model pays it

    found = optimize.least_squares(residual, start, method="lm")
    inside = shape(found.x)
    dof = len(ly) - points.blocks - 2
    if not found.success or (inside <= 0).any() or dof < 1:
        return None
    jacobian = np.column_stack([points.within(points.swept / inside), points.within(points.x / inside)])
    if np.linalg.matrix_rank(jacobian) < 2:
        return None
    rss = float(found.fun @ found.fun)
    cov = (rss / dof) * np.linalg.inv(jacobian.T @ jacobian)
    a, slope = float(found.x[0]), float(found.x[1])
    a_lo, a_hi = _interval(a, float(cov[0, 0]), dof)
    if a <= -1 or a_hi <= -1:  # no positive value at x = 0: the model says nothing of the change there
        return None
    n = len(ly)
    return LineFit(
        ADDITIVE, math.log1p(a), (math.log1p(max(a_lo, -1 + 1e-12)), math.log1p(a_hi)), slope,
        _interval(slope, float(cov[1, 1]), dof), n, points.blocks, 2, rss, n * math.log(max(rss, 1e-300) / n) + 4,
        _lack_of_fit(rss, 2, len(points.levels), pure),
    )  # fmt: skip


def choose(models: list[LineFit]) -> LineFit | None:
    """The spec's line (the first model) when it describes the points; else the model of lowest
    AIC among those that pass the lack-of-fit test; None where none does."""
    if models[0].fits:
        return models[0]
    passing = [m for m in models[1:] if m.lack_of_fit_p is not None and m.fits]
    return min(passing, key=lambda m: m.aic) if passing else None


def as_fraction(value: float) -> float:
    return math.expm1(value)
