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
from collections.abc import Callable

import numpy as np
from scipy import special

from benchlab.stats.selection import difference_order_statistics, walsh_order_statistics

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
    k = _median_rank(n, level)
    if k < 1:
        return med, NAN, NAN
    return med, float(x[k - 1]), float(x[n - k])


@functools.cache
def _median_rank(n: int, level: float) -> int:
    """Largest k with P(B <= k - 1) <= (1 - level) / 2 for B ~ Binomial(n, 1/2); 0 if none."""

    def binomial_cdf(k: int) -> float:
        return float(special.bdtr(k, n, 0.5))  # scipy.stats.binom.cdf's own function

    return _within(binomial_cdf, (1 - level) / 2, _normal_guess(n / 2, math.sqrt(n) / 2, 1 - level, n), n)


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


Interval = tuple[float, float]


def _median_ranks(total: int) -> list[int]:
    return [(total + 1) // 2] if total % 2 else [total // 2, total // 2 + 1]


def _estimate_and_intervals(
    total: int, criticals: list[int], order_statistics: Callable[[list[int]], list[float]]
) -> tuple[float, list[Interval]]:
    """The median of the implicit values and, per critical c, the interval [c-th, (total-c+1)-th]."""
    mids = _median_ranks(total)
    bounds = [r for c in criticals if c >= 1 for r in (c, total - c + 1)]
    values = dict(zip(sorted(set(mids + bounds)), order_statistics(sorted(set(mids + bounds))), strict=True))
    est = float(np.mean([values[r] for r in mids]))
    intervals = [(values[c], values[total - c + 1]) if c >= 1 else (NAN, NAN) for c in criticals]
    return est, intervals


def hodges_lehmann_paired(d: np.ndarray, levels: tuple[float, ...] = (0.95,)) -> tuple[float, list[Interval]]:
    """Median of the Walsh averages, with an interval per level read from the signed-rank distribution."""
    d = np.asarray(d, dtype=float)
    n = len(d)
    if n == 0:
        return NAN, [(NAN, NAN) for _ in levels]
    total = n * (n + 1) // 2
    criticals = [signed_rank_count(n, 1 - level) for level in levels]
    return _estimate_and_intervals(total, criticals, lambda ranks: walsh_order_statistics(d, ranks))


def hodges_lehmann_two_sample(x: np.ndarray, y: np.ndarray, levels: tuple[float, ...] = (0.95,)) -> tuple[float, list[Interval]]:
    """Shift of x over y: median of all x_i - y_j, with an interval per level."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) == 0 or len(y) == 0:
        return NAN, [(NAN, NAN) for _ in levels]
    criticals = [rank_sum_count(len(x), len(y), 1 - level) for level in levels]
    return _estimate_and_intervals(len(x) * len(y), criticals, lambda ranks: difference_order_statistics(x, y, ranks))


def signed_rank_p_exact(t_plus: np.ndarray | float, n: int) -> np.ndarray:
    """Exact two-sided p of untied signed-rank sums T+ of n pairs (vectorised over T+)."""
    cdf = _signed_rank_cdf(n)
    t = np.rint(np.asarray(t_plus)).astype(np.int64)
    below = cdf[t]
    above = 1.0 - np.where(t > 0, cdf[np.maximum(t - 1, 0)], 0.0)
    return np.minimum(1.0, 2.0 * np.minimum(below, above))


def paired_t(d: np.ndarray, levels: tuple[float, ...] = (0.95,)) -> tuple[float, list[Interval], float]:
    """Mean difference, its t intervals and the two-sided one-sample t-test p (scipy).

    Used below SMALL_N pairs, where no signed-rank test can reject at 5% (its smallest
    p is 2^(1-n)); on log ratios its level holds for the symmetric differences an A/A
    comparison gives, heavy tails included (bench/verdict_calibration.py measures it).
    """
    mean, se, p = _one_sample_t(np.asarray(d, dtype=float))
    return float(mean), [_t_interval(mean, se, len(d) - 1, level) for level in levels], p


def paired_t_interval(d: np.ndarray, threshold: float) -> Interval:
    """The t interval that excludes zero exactly when the paired t's p is at most `threshold`."""
    mean, se, _ = _one_sample_t(np.asarray(d, dtype=float))
    return _t_interval(mean, se, len(d) - 1, 1 - threshold)


def _one_sample_t(d: np.ndarray) -> tuple[np.float64, np.float64, float]:
    """Mean, standard error and two-sided p of the one-sample t-test against zero, computed as
    `scipy.stats.ttest_1samp` computes them, step for step and on the same `scipy.special`
    functions: importing scipy.stats would cost every command that judges anything a third of a
    second of CPU for these few lines (docs/design.md, "Start-up")."""
    n = len(d)
    mean = np.mean(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(np.mean((d - mean) ** 2) * np.divide(n, n - 1) / n)
        t = np.divide(mean, se)
    return mean, se, float(2 * special.stdtr(n - 1, -np.abs(t)))


def _t_interval(mean: np.float64, se: np.float64, dof: int, level: float) -> Interval:
    """scipy's `TtestResult.confidence_interval`: the t quantiles of both tails, scaled and shifted."""
    tail = (1 - level) / 2
    return float(special.stdtrit(dof, tail) * se + mean), float(special.stdtrit(dof, 1 - tail) * se + mean)


# The rank tests below are read off the Hodges-Lehmann intervals themselves: a test's p is the
# smallest threshold at which its interval excludes zero, so `p <= b` and "the interval at b
# excludes zero" are one comparison of the same floats, never two procedures that can disagree.
# The interval at b is [v_c, v_(N-c+1)] of the N pairwise values (Walsh averages, or differences
# of two samples), with c the number of counts t whose tail p `tail(t)` is at most b; it excludes
# zero exactly when k, the number of values on the rarer side of zero (zero counting on both),
# is below c, that is when tail(k) <= b. Without ties and zeros k is the signed-rank (or
# Mann-Whitney) statistic and the p is the exact test's; a tie at zero counts against a verdict,
# so with ties the test only grows more cautious.


def _within(tail: Callable[[int], float], threshold: float, guess: int, total: int) -> int:
    """How many t = 0, 1, ... have tail(t) <= threshold (tail grows with t), stepped exactly from a guess."""
    c = min(max(guess, 0), total)
    while c > 0 and tail(c - 1) > threshold:
        c -= 1
    while c < total and tail(c) <= threshold:
        c += 1
    return c


def _normal_guess(mean: float, sd: float, threshold: float, total: int) -> int:
    """Where the normal approximation puts the count c, for `_within` to step from."""
    guess = mean - special.ndtri(1 - min(threshold, 1.0) / 2) * sd
    return int(min(max(guess, 0.0), total)) if math.isfinite(guess) else 0


def _signed_rank_moments(n: int) -> tuple[float, float]:
    return n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)


def signed_rank_tail(k: int, n: int) -> float:
    """Two-sided p of k Walsh averages of n pairs on the rarer side of zero: exact up to 200 pairs,
    then the normal approximation with a continuity correction of one count."""
    if n <= EXACT_SIGNED_RANK_MAX_N:
        return float(min(1.0, 2.0 * _signed_rank_cdf(n)[k]))
    mean, sd = _signed_rank_moments(n)
    return float(min(1.0, 2.0 * special.ndtr((k + 1 - mean) / sd)))


@functools.lru_cache(maxsize=4096)
def signed_rank_count(n: int, threshold: float) -> int:
    """The c of the paired interval at `threshold`: how many t have signed_rank_tail(t, n) <= threshold."""
    total = n * (n + 1) // 2
    if n <= EXACT_SIGNED_RANK_MAX_N:
        return int(np.searchsorted(np.minimum(1.0, 2.0 * _signed_rank_cdf(n)), threshold, side="right"))
    mean, sd = _signed_rank_moments(n)
    return _within(lambda t: signed_rank_tail(t, n), threshold, _normal_guess(mean, sd, threshold, total), total)


def walsh_sides(d: np.ndarray) -> tuple[int, int]:
    """How many Walsh averages (d_i + d_j) / 2, i <= j, are <= 0 and >= 0, by binary search:
    d_i + d_j <= 0 exactly when d_j <= -d_i, in floating point too."""
    d = np.sort(np.asarray(d, dtype=float))
    n = len(d)
    le = int(np.searchsorted(d, -d, side="right").sum()) + int((d <= 0).sum())  # ordered pairs, the diagonal twice
    ge = n * n - int(np.searchsorted(d, -d, side="left").sum()) + int((d >= 0).sum())
    return le // 2, ge // 2


def signed_rank_test(d: np.ndarray) -> tuple[float, float]:
    """(p, smallest p) of the paired Hodges-Lehmann interval's own test. The smallest p these
    pairs could give has every non-zero difference of one sign; the z zero differences still
    put their z(z+1)/2 Walsh averages at zero, on both sides (1 when all are zero)."""
    n = len(d)
    if n == 0:
        return NAN, 1.0
    zeros = int(np.count_nonzero(np.asarray(d) == 0))
    return signed_rank_tail(min(walsh_sides(d)), n), signed_rank_tail(zeros * (zeros + 1) // 2, n)


def signed_rank_interval(d: np.ndarray, threshold: float) -> Interval:
    """The paired Hodges-Lehmann interval that excludes zero exactly when signed_rank_test's p <= threshold."""
    n = len(d)
    total = n * (n + 1) // 2
    c = min(signed_rank_count(n, threshold), (total + 1) // 2) if n else 0  # a threshold of 1/2 or more: the median
    if c < 1:
        return NAN, NAN
    lo, hi = walsh_order_statistics(d, [c, total - c + 1])
    return lo, hi


def _rank_sum_moments(m: int, n: int) -> tuple[float, float]:
    return m * n / 2, math.sqrt(m * n * (m + n + 1) / 12)


def rank_sum_tail(k: int, m: int, n: int) -> float:
    """Two-sided p of k of the m*n differences on the rarer side of zero, from the normal
    approximation to Mann-Whitney's U with a continuity correction of one count (the
    approximation the two-sample interval has always been read from)."""
    mean, sd = _rank_sum_moments(m, n)
    return float(min(1.0, 2.0 * special.ndtr((k + 1 - mean) / sd)))


@functools.lru_cache(maxsize=4096)
def rank_sum_count(m: int, n: int, threshold: float) -> int:
    """The c of the two-sample interval at `threshold`."""
    mean, sd = _rank_sum_moments(m, n)
    return _within(lambda t: rank_sum_tail(t, m, n), threshold, _normal_guess(mean, sd, threshold, m * n), m * n)


def rank_sum_test(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(p, smallest p) of the two-sample Hodges-Lehmann interval's own test: how many x_i - y_j
    lie on each side of zero, counted by binary search (x_i - y_j <= 0 exactly when x_i <= y_j)."""
    m, n = len(x), len(y)
    if m == 0 or n == 0:
        return NAN, 1.0
    ys = np.sort(np.asarray(y, dtype=float))
    x = np.asarray(x, dtype=float)
    le = int((n - np.searchsorted(ys, x, side="left")).sum())
    ge = int(np.searchsorted(ys, x, side="right").sum())
    return rank_sum_tail(min(le, ge), m, n), rank_sum_tail(0, m, n)


def rank_sum_interval(x: np.ndarray, y: np.ndarray, threshold: float) -> Interval:
    """The two-sample Hodges-Lehmann interval that excludes zero exactly when rank_sum_test's p <= threshold."""
    m, n = len(x), len(y)
    c = min(rank_sum_count(m, n, threshold), (m * n + 1) // 2) if m and n else 0
    if c < 1:
        return NAN, NAN
    lo, hi = difference_order_statistics(x, y, [c, m * n - c + 1])
    return lo, hi
