"""The fit of a sweep: how a metric changes with the swept value.

Model, on the log scale (so coefficients are relative changes), one row per run:

    log y = block effect + a * [swept variant] + s * x + error

where x is the swept value (or its reciprocal, for "1 in N" rates) for swept
variants and 0 for the reference. The block effects absorb drift; `a` is the
change at x = 0 against the reference (for an allocator shim swept over its
sampling rate, the cost of merely being installed) and `s` the change per unit
of x. Fitted by least squares after removing block means (the within
estimator, equal to fitting a dummy per block without building that matrix),
with t intervals from the residual variance. Hand-written because it is a
few lines of numpy; statsmodels would add a large dependency for one model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

LEVEL = 0.95


@dataclass(frozen=True)
class LineFit:
    intercept: float  # log-scale change at x = 0 against the reference
    intercept_ci: tuple[float, float]
    slope: float  # log-scale change per unit of x
    slope_ci: tuple[float, float]
    n: int
    blocks: int


def fit_line(keys: np.ndarray, swept: np.ndarray, x: np.ndarray, y: np.ndarray) -> LineFit | None:
    """keys: each run's block; swept: 1 for swept variants, 0 for the reference; x: the swept
    value (0 for the reference); y: the log metric. None when the data cannot identify a line."""
    _, block = np.unique(keys, return_inverse=True)
    counts = np.bincount(block)
    keep = counts[block] >= 2  # a block with one run says nothing once its mean is removed
    block, swept, x, y = block[keep], swept[keep].astype(float), x[keep].astype(float), y[keep]
    if len(y) == 0:
        return None
    _, block = np.unique(block, return_inverse=True)
    blocks = int(block.max()) + 1
    counts = np.bincount(block)

    def within(v: np.ndarray) -> np.ndarray:
        return v - (np.bincount(block, weights=v) / counts)[block]

    design = np.column_stack([within(swept), within(x)])
    dof = len(y) - blocks - 2
    if dof < 1 or np.linalg.matrix_rank(design) < 2:
        return None
    yw = within(y)
    coef, _, _, _ = np.linalg.lstsq(design, yw, rcond=None)
    resid = yw - design @ coef
    sigma2 = float(resid @ resid) / dof
    cov = sigma2 * np.linalg.inv(design.T @ design)
    t = float(stats.t.ppf(0.5 + LEVEL / 2, dof))
    se = np.sqrt(np.diag(cov))
    a, s = float(coef[0]), float(coef[1])
    return LineFit(a, (a - t * se[0], a + t * se[0]), s, (s - t * se[1], s + t * se[1]), len(y), blocks)


def as_fraction(value: float) -> float:
    return math.expm1(value)
