"""Order statistics of all pairwise sums or differences without materialising them.

Hodges-Lehmann estimates and their intervals are order statistics of the
n(n+1)/2 Walsh averages (or the m*n differences of two samples). For a few
thousand blocks that is tens of millions of values per metric, too many to
sort for every row of a report. No library offers this selection, so it is
written here: an even grid of the pairs brackets each wanted rank, exact
counts (binary searches over the sorted data) confirm the bracket, and only
the pairs inside it are formed and sorted. The answer is exact; only the
running time is random.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

MATERIALISE_BELOW = 400_000
GRID = 250  # a GRID x GRID sample of pairs drawn evenly from the order statistics


def _select(
    total: int,
    ranks: list[int],
    count_le: Callable[[float], int],
    between: Callable[[float, float], np.ndarray],
    sample: np.ndarray,
    smallest: float,
    largest: float,
) -> list[float]:
    """The values of the given 1-based ranks among `total` implicit values in [smallest, largest]."""
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
            kth = [rank - below - 1 for rank in group]
            inside = np.partition(between(lo, hi), kth)
            found.update({rank: float(inside[k]) for rank, k in zip(group, kth, strict=True)})
        pending = missed
        sigmas *= 3
    return [found[r] for r in ranks]


def _index_ranges(first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All pairs (i, j) with first[i] <= j < last[i], as two index arrays, without a Python loop."""
    counts = last - first
    rows = np.repeat(np.arange(len(first)), counts)
    cols = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(first, counts)
    return rows, cols


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

    def count_le(v: float) -> int:
        return int(np.maximum(np.searchsorted(d, 2 * v - d, side="right") - index, 0).sum())

    def between(lo: float, hi: float) -> np.ndarray:
        first = np.maximum(np.searchsorted(d, 2 * lo - d, side="right"), index)
        last = np.maximum(np.searchsorted(d, 2 * hi - d, side="right"), first)
        rows, cols = _index_ranges(first, last)
        return (d[rows] + d[cols]) / 2

    grid = d[np.linspace(0, n - 1, GRID).astype(int)]
    sample = np.add.outer(grid, grid).ravel() / 2
    return _select(total, ranks, count_le, between, sample, float(d[0]), float(d[-1]))


def difference_order_statistics(x: np.ndarray, y: np.ndarray, ranks: list[int]) -> list[float]:
    """Values at 1-based `ranks` among all differences x_i - y_j."""
    x = np.sort(np.asarray(x, dtype=float))
    y = np.sort(np.asarray(y, dtype=float))
    total = len(x) * len(y)
    if total <= MATERIALISE_BELOW:
        diffs = np.partition(np.subtract.outer(x, y).ravel(), [r - 1 for r in ranks])
        return [float(diffs[r - 1]) for r in ranks]

    def count_le(v: float) -> int:  # x_i - y_j <= v  <=>  y_j >= x_i - v
        return int((len(y) - np.searchsorted(y, x - v, side="left")).sum())

    def between(lo: float, hi: float) -> np.ndarray:
        first = np.searchsorted(y, x - hi, side="left")
        last = np.searchsorted(y, x - lo, side="left")
        rows, cols = _index_ranges(first, np.maximum(last, first))
        return x[rows] - y[cols]

    sample = np.subtract.outer(
        x[np.linspace(0, len(x) - 1, GRID).astype(int)], y[np.linspace(0, len(y) - 1, GRID).astype(int)]
    ).ravel()
    return _select(total, ranks, count_le, between, sample, float(x[0] - y[-1]), float(x[-1] - y[0]))
