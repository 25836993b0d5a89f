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
from scipy import special, stats

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
    tail = (1 - level) / 2
    k = int(stats.binom.ppf(tail, n, 0.5))  # smallest q with P(B <= q) >= tail
    while k > 0 and stats.binom.cdf(k - 1, n, 0.5) > tail:
        k -= 1
    while stats.binom.cdf(k, n, 0.5) <= tail:
        k += 1
    return k


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


@functools.cache  # a report asks for the same few (n, level) on every row; scipy's ppf costs ~0.1 ms a call
def signed_rank_critical(n: int, level: float) -> int:
    """Largest c with P(T+ <= c - 1) <= (1 - level) / 2; 0 when no interval reaches the level."""
    tail = (1 - level) / 2
    if n <= EXACT_SIGNED_RANK_MAX_N:
        cdf = _signed_rank_cdf(n)
        return int(np.searchsorted(cdf, tail, side="right"))
    mean = n * (n + 1) / 4
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return max(0, int(math.floor(mean - stats.norm.ppf(1 - tail) * sd)))


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
    criticals = [signed_rank_critical(n, level) for level in levels]
    return _estimate_and_intervals(total, criticals, lambda ranks: walsh_order_statistics(d, ranks))


@functools.cache
def rank_sum_critical(m: int, n: int, level: float) -> int:
    """Critical count for the two-sample interval, from the normal approximation to U."""
    z = stats.norm.ppf(1 - (1 - level) / 2)
    return int(math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12)))


def hodges_lehmann_two_sample(x: np.ndarray, y: np.ndarray, levels: tuple[float, ...] = (0.95,)) -> tuple[float, list[Interval]]:
    """Shift of x over y: median of all x_i - y_j, with an interval per level."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) == 0 or len(y) == 0:
        return NAN, [(NAN, NAN) for _ in levels]
    criticals = [rank_sum_critical(len(x), len(y), level) for level in levels]
    return _estimate_and_intervals(len(x) * len(y), criticals, lambda ranks: difference_order_statistics(x, y, ranks))


EXACT_TIED_MAX = 16  # 2**16 sign patterns: a few milliseconds


def signed_rank_p(d: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p (zeros dropped, as Wilcoxon did); 1 when every
    difference is zero.

    Without ties the exact distribution (`_signed_rank_cdf`, shared with the sequential
    calibration so both read the same p) serves up to 200 pairs. Tied magnitudes (counts,
    coarse timers) get the exact permutation p over sign patterns of their midranks,
    enumerated here with numpy: scipy computes the same p through its generic
    permutation_test for up to 13 pairs, ~0.3 s a call, which made a report of 2,300 rows
    take three minutes. Beyond these, scipy's normal approximation with tie correction.
    """
    d = np.asarray(d, dtype=float)
    d = d[d != 0]
    n = len(d)
    if n == 0:
        return 1.0
    ranks = stats.rankdata(np.abs(d))
    _, ties = np.unique(ranks, return_counts=True)
    tied = len(ties) < n
    if not tied and n <= EXACT_SIGNED_RANK_MAX_N:
        return float(signed_rank_p_exact(ranks[d > 0].sum(), n))
    if not tied or n > EXACT_TIED_MAX:
        return _signed_rank_normal_p(d, ranks, ties)
    patterns = (np.arange(1 << n)[:, None] >> np.arange(n)) & 1
    null = patterns @ ranks
    centre = ranks.sum() / 2
    observed = abs(ranks[d > 0].sum() - centre)
    return float(np.mean(np.abs(null - centre) >= observed - 1e-9))


def _signed_rank_normal_p(d: np.ndarray, ranks: np.ndarray, ties: np.ndarray) -> float:
    """`scipy.stats.wilcoxon(d, method="approx").pvalue` (no continuity correction, zeros already
    dropped) computed term by term as scipy does, so the p is the same to the last bit, without
    the ~1.5 ms its argument checks cost per call, a third of a 100,000-run report. Every sum
    here is of integers or half-integers, exact in any order."""
    n = len(d)
    r_plus = np.sum((d > 0).astype(float) * ranks)
    mean = n * (n + 1.0) * 0.25
    tie_correct = np.sum(ties.astype(float) ** 3 - ties)
    se = np.sqrt((n * (n + 1.0) * (2.0 * n + 1.0) - tie_correct / 2) / 24)
    z = (r_plus - mean) / se
    return float(2 * special.ndtr(-np.abs(z)))


def signed_rank_p_exact(t_plus: np.ndarray | float, n: int) -> np.ndarray:
    """Exact two-sided p of untied signed-rank sums T+ of n pairs (vectorised over T+)."""
    cdf = _signed_rank_cdf(n)
    t = np.rint(np.asarray(t_plus)).astype(np.int64)
    below = cdf[t]
    above = 1.0 - np.where(t > 0, cdf[np.maximum(t - 1, 0)], 0.0)
    return np.minimum(1.0, 2.0 * np.minimum(below, above))


def signed_rank_min_p(d: np.ndarray) -> float:
    """The smallest p the signed-rank test can give these pairs: every non-zero difference
    of one sign, 2^(1-n'); 1 when all are zero (Tarone's rule leaves such rows out)."""
    nonzero = int(np.count_nonzero(np.asarray(d)))
    return 1.0 if nonzero == 0 else min(1.0, 2.0 ** (1 - nonzero))


def paired_t(d: np.ndarray, levels: tuple[float, ...] = (0.95,)) -> tuple[float, list[Interval], float]:
    """Mean difference, its t intervals and the two-sided one-sample t-test p (scipy).

    Used below SMALL_N pairs, where no signed-rank test can reject at 5% (its smallest
    p is 2^(1-n)); on log ratios its level holds for the symmetric differences an A/A
    comparison gives, heavy tails included (bench/verdict_calibration.py measures it).
    """
    d = np.asarray(d, dtype=float)
    result = stats.ttest_1samp(d, 0.0)
    intervals = []
    for level in levels:
        ci = result.confidence_interval(confidence_level=level)
        intervals.append((float(ci.low), float(ci.high)))
    return float(np.mean(d)), intervals, float(result.pvalue)


def rank_sum_min_p(m: int, n: int) -> float:
    """The smallest two-sided Mann-Whitney p with samples of m and n: complete separation,
    2 / C(m + n, m), on the log scale: from ~515 runs a side C(m + n, m) is too large for a float."""
    if m == 0 or n == 0:
        return 1.0
    log_ways = math.lgamma(m + n + 1) - math.lgamma(m + 1) - math.lgamma(n + 1)
    return min(1.0, math.exp(math.log(2.0) - log_ways))


def rank_sum_p(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p; 1 when both samples are one identical constant."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) == 0 or len(y) == 0:
        return NAN
    if np.ptp(np.concatenate([x, y])) == 0:
        return 1.0
    return float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)
