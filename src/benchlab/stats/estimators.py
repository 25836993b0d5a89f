"""Point estimates and distribution-free intervals.

scipy gives the tests but not the Hodges-Lehmann intervals that go with
them, nor the exact null distribution of the signed-rank statistic they are
read from; those few functions are written here, each from its textbook
definition (Hollander, Wolfe & Chicken, *Nonparametric Statistical Methods*,
3.2 and 4.3).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import stats

NAN = float("nan")
EXACT_SIGNED_RANK_MAX_N = 200


def median_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Median with the order-statistic interval: ranks from Binomial(n, 1/2).

    Bounds are NaN when n is too small for the interval to reach the level.
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0:
        return NAN, NAN, NAN
    med = float(np.median(x))
    tail = (1 - level) / 2
    k = int(np.searchsorted(stats.binom.cdf(np.arange(n), n, 0.5), tail, side="right"))
    if k < 1:
        return med, NAN, NAN
    return med, float(x[k - 1]), float(x[n - k])


@functools.cache
def _signed_rank_cdf(n: int) -> np.ndarray:
    """P(T+ <= t) for t = 0..n(n+1)/2 under H0, by counting subsets of ranks with each sum."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    top = 0
    for rank in range(1, n + 1):
        counts[rank : top + rank + 1] += counts[: top + 1].copy()
        top += rank
    return np.cumsum(counts) / 2.0**n


def signed_rank_critical(n: int, level: float) -> int:
    """Largest c with P(T+ <= c - 1) <= (1 - level) / 2; 0 when no interval reaches the level."""
    tail = (1 - level) / 2
    if n <= EXACT_SIGNED_RANK_MAX_N:
        cdf = _signed_rank_cdf(n)
        return int(np.searchsorted(cdf, tail, side="right"))
    mean = n * (n + 1) / 4
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return max(0, int(math.floor(mean - stats.norm.ppf(1 - tail) * sd)))


def hodges_lehmann_paired(d: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Median of the Walsh averages, with the interval read from the signed-rank distribution."""
    d = np.asarray(d, dtype=float)
    n = len(d)
    if n == 0:
        return NAN, NAN, NAN
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    est = float(np.median(walsh))
    c = signed_rank_critical(n, level)
    if c < 1:
        return est, NAN, NAN
    return est, float(walsh[c - 1]), float(walsh[len(walsh) - c])


def hodges_lehmann_two_sample(x: np.ndarray, y: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Shift of x over y: median of all x_i - y_j, interval from the normal approximation to U."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    m, n = len(x), len(y)
    if m == 0 or n == 0:
        return NAN, NAN, NAN
    diffs = np.sort(np.subtract.outer(x, y).ravel())
    est = float(np.median(diffs))
    z = stats.norm.ppf(1 - (1 - level) / 2)
    c = int(math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12)))
    if c < 1:
        return est, NAN, NAN
    return est, float(diffs[c - 1]), float(diffs[len(diffs) - c])


def signed_rank_p(d: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p; 1 when every difference is zero."""
    d = np.asarray(d, dtype=float)
    if len(d) == 0 or np.all(d == 0):
        return 1.0
    return float(stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)


def rank_sum_p(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p; 1 when both samples are one identical constant."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) == 0 or len(y) == 0:
        return NAN
    if np.ptp(np.concatenate([x, y])) == 0:
        return 1.0
    return float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)
