"""Order statistics of all pairwise sums or differences without materialising them.

Hodges-Lehmann estimates and their intervals are order statistics of the
n(n+1)/2 Walsh averages (or the m*n differences of two samples). For a few
thousand blocks that is tens of millions of values per metric, too many to
sort for every row of a report. No library offers this selection, so it is
written here: an even grid of the pairs brackets each wanted rank, exact
counts (binary searches over the sorted data) confirm the bracket, and only
the pairs inside it are formed and sorted. The answer is exact to the last
bit, ties and rounding included: a count is of the values as formed in
floating point (`_settle`), so the values formed inside a bracket are exactly
those between its ends; only the running time is random.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

MATERIALISE_BELOW = 400_000
GRID = 250  # a GRID x GRID sample of pairs drawn evenly from the order statistics
NARROW_TO = 4096  # a bracket holding more values than this is narrowed by counting before they are formed
NARROW_STEPS = 4
CACHED_SEARCHES = 32


def _select(
    total: int,
    ranks: list[int],
    count_le: Callable[[float], int],
    between: Callable[[float, float], np.ndarray],
    sample: np.ndarray,
    smallest: float,
    largest: float,
) -> list[float]:
    """The values of the given 1-based ranks among `total` implicit values in [smallest, largest].
    `count_le(v)` counts the values at or under v, as formed in floating point, and `between(lo, hi)`
    forms those counted at hi and not at lo."""
    span = abs(largest - smallest) + 1.0
    last = len(sample) - 1
    found: dict[int, float] = {}
    pending = sorted(set(ranks))
    sigmas = 1.0
    while pending:
        # brackets in sample positions, merged where they overlap (the two middle ranks always do)
        windows: list[tuple[int, int, list[int]]] = []
        for rank in pending:
            p = rank / total
            width = sigmas * np.sqrt(max(p * (1 - p), 1 / total) / len(sample)) + 2 / len(sample)
            lo_pos, hi_pos = int((p - width) * last), int(np.ceil((p + width) * last))
            if windows and lo_pos <= windows[-1][1]:
                windows[-1] = (windows[-1][0], max(hi_pos, windows[-1][1]), [*windows[-1][2], rank])
            else:
                windows.append((lo_pos, hi_pos, [rank]))
        positions = sorted({min(max(pos, 0), last) for lo, hi, _ in windows for pos in (lo, hi)})
        picked = np.partition(sample, positions)
        missed = []
        for lo_pos, hi_pos, group in windows:
            lo = float(picked[lo_pos]) if lo_pos >= 0 else smallest - span
            hi = float(picked[hi_pos]) if hi_pos <= last else largest + span
            below = count_le(lo) if lo_pos >= 0 else 0
            upto = count_le(hi) if hi_pos <= last else total
            if not (below < group[0] and group[-1] <= upto):
                missed += group  # the sample misjudged this bracket: widen it and look again
                continue
            for cluster in _clusters(group):
                c_lo, c_hi, c_below, _ = _narrow(lo, hi, below, upto, cluster, count_le)
                kth = [rank - c_below - 1 for rank in cluster]
                inside = np.partition(between(c_lo, c_hi), kth)
                found.update({rank: float(inside[k]) for rank, k in zip(cluster, kth, strict=True)})
        pending = missed
        sigmas *= 3
    return [found[r] for r in ranks]


def _clusters(ranks: list[int]) -> list[list[int]]:
    """Sorted ranks in runs whose neighbours lie within NARROW_TO of each other."""
    out = [[ranks[0]]]
    for rank in ranks[1:]:
        if rank - out[-1][-1] <= NARROW_TO:
            out[-1].append(rank)
        else:
            out.append([rank])
    return out


def _narrow(
    lo: float,
    hi: float,
    below: int,
    upto: int,
    ranks: list[int],
    count_le: Callable[[float], int],
) -> tuple[float, float, int, int]:
    """The bracket (lo, hi] with `below` values at or under lo and `upto` at or under hi, shrunk
    around `ranks` by counting at values interpolated between its ends: a count costs a binary
    search per data point, forming the values inside one step per value, so a wide bracket is
    narrowed first. A new end must keep every wanted rank inside (below < ranks, ranks <= upto).
    With ties a count may not move; the steps are bounded."""
    first, last = ranks[0], ranks[-1]
    margin = NARROW_TO // 8
    for _ in range(NARROW_STEPS):
        if upto - below <= NARROW_TO + last - first:
            break
        for target in (first - margin, last + margin):
            if not below < target < upto:
                continue
            v = lo + (hi - lo) * (target - below) / (upto - below)
            if not lo < v < hi:
                continue
            count = count_le(v)
            if count < first:
                lo, below = v, count
            elif count >= last:
                hi, upto = v, count
    return lo, hi, below, upto


def _index_ranges(first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All pairs (i, j) with first[i] <= j < last[i], without a Python loop: how many j each i
    has (for `np.repeat` of the row values, cheaper than gathering them by index) and the j."""
    counts = last - first
    cols = np.arange(counts.sum()) + np.repeat(first - (np.cumsum(counts) - counts), counts)
    return counts, cols


def _settle(
    end: np.ndarray, rows: np.ndarray, padded: np.ndarray, inside: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> np.ndarray:
    """Per row value, the length of the prefix of the sorted values (`padded`: with +inf after
    the last) that `inside(row, value)` holds for, from a binary search's guess `end` (changed in
    place). The search compared with a bound worked out in floating point (2v - d_i), not with the
    value each pair forms ((d_i + d_j) / 2), so near the bound it can be off by the values within a
    rounding of it: an end moves past whole runs of equal values (they form equal values) until
    its last counted value is inside and its first uncounted one is not. `inside` is monotone
    along a row, so each end moves one way and stops where the formed values do; in the common
    case nothing moves and this costs two gathers."""
    values = padded[:-1]
    while (at := np.flatnonzero((end > 0) & ~inside(rows, padded[end - 1]))).size:
        end[at] = np.searchsorted(values, padded[end[at] - 1], side="left")
    while (at := np.flatnonzero(inside(rows, padded[end]))).size:
        end[at] = np.searchsorted(values, padded[end[at]], side="right")
    return end


def walsh_order_statistics(d: np.ndarray, ranks: list[int]) -> list[float]:
    """Values at 1-based `ranks` among the Walsh averages (d_i + d_j) / 2, i <= j."""
    d = np.sort(np.asarray(d, dtype=float))
    n = len(d)
    total = n * (n + 1) // 2
    if total <= MATERIALISE_BELOW:
        i, j = np.triu_indices(n)
        walsh = np.partition((d[i] + d[j]) / 2, [r - 1 for r in ranks])
        return [float(walsh[r - 1]) for r in ranks]
    index = np.arange(n)
    padded = np.append(d, np.inf)
    flipped = d[::-1]  # 2v - d searched as ascending keys: numpy's search then starts from the last hit, 10x faster

    @functools.lru_cache(maxsize=CACHED_SEARCHES)  # a bracket's ends are counted, then their values formed
    def partners(v: float) -> np.ndarray:
        """Per i, how many j have (d_i + d_j) / 2 <= v as formed; searched only for the k values
        d_i <= v. For the others no j >= i is counted (d_i + d_j >= 2 d_i > 2v, and rounding
        keeps that order) and every use below takes the larger of it and i, so i stands in for
        it: half the binary searches of a count."""
        k = int(np.searchsorted(d, v, side="right"))
        guess = np.searchsorted(d, 2 * v - flipped[n - k :], side="right")[::-1]
        counted = _settle(guess, d[:k], padded, lambda di, dj: (di + dj) / 2 <= v)
        return np.concatenate([counted, index[k:]])

    def count_le(v: float) -> int:
        return int(np.maximum(partners(v) - index, 0).sum())

    def between(lo: float, hi: float) -> np.ndarray:
        first = np.maximum(partners(lo), index)
        last = np.maximum(partners(hi), first)
        counts, cols = _index_ranges(first, last)
        return (np.repeat(d, counts) + d[cols]) / 2

    grid = d[np.linspace(0, n - 1, GRID).astype(int)]
    sample = np.add.outer(grid, grid).ravel() / 2
    return _select(total, ranks, count_le, between, sample, float(d[0]), float(d[-1]))


def difference_order_statistics(x: np.ndarray, y: np.ndarray, ranks: list[int]) -> list[float]:
    """Values at 1-based `ranks` among all differences x_i - y_j."""
    x = np.sort(np.asarray(x, dtype=float))
    y = np.sort(np.asarray(y, dtype=float))
    total = len(x) * len(y)
    padded = np.append(y, np.inf)
    if total <= MATERIALISE_BELOW:
        diffs = np.partition(np.subtract.outer(x, y).ravel(), [r - 1 for r in ranks])
        return [float(diffs[r - 1]) for r in ranks]

    @functools.lru_cache(maxsize=CACHED_SEARCHES)
    def below(v: float) -> np.ndarray:
        """Per i, how many j have x_i - y_j > v as formed (the smallest y; the others are counted)."""
        return _settle(np.searchsorted(y, x - v, side="left"), x, padded, lambda xi, yj: xi - yj > v)

    def count_le(v: float) -> int:
        return int((len(y) - below(v)).sum())

    def between(lo: float, hi: float) -> np.ndarray:
        first = below(hi)
        last = below(lo)
        counts, cols = _index_ranges(first, np.maximum(last, first))
        return np.repeat(x, counts) - y[cols]

    sample = np.subtract.outer(
        x[np.linspace(0, len(x) - 1, GRID).astype(int)], y[np.linspace(0, len(y) - 1, GRID).astype(int)]
    ).ravel()
    return _select(total, ranks, count_le, between, sample, float(x[0] - y[-1]), float(x[-1] - y[0]))
