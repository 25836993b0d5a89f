"""From a change, its intervals and its adjusted p to a verdict a reader can act on."""

from __future__ import annotations

import math

BETTER, WORSE, SAME, UNCLEAR, NOT_JUDGED = "better", "worse", "same", "unclear", "-"
MAX_RUNS_NEEDED = 100_000


def verdict(
    *, direction: str, change: float, ci: tuple[float, float], ci90: tuple[float, float], q: float, alpha: float, margin: float
) -> str:
    """better/worse: adjusted p below alpha and the 95% CI excludes zero; same: the 90% CI inside
    +-margin (two one-sided tests); anything else is unclear, never silently 'same'."""
    if direction == "none":
        return NOT_JUDGED
    lo, hi = ci
    if not math.isnan(q) and q < alpha and not math.isnan(lo) and (lo > 0 or hi < 0):
        return WORSE if (change > 0) == (direction == "lower") else BETTER
    lo90, hi90 = ci90
    if not math.isnan(lo90) and -margin < lo90 and hi90 < margin:
        return SAME
    return UNCLEAR


def min_pairs_to_decide(alpha: float, comparisons: int) -> int:
    """Blocks below which even a perfectly consistent change cannot pass the signed-rank test:
    the smallest two-sided p with n pairs is 2^(1-n), and the correction may demand alpha/m."""
    return max(2, math.ceil(1 - math.log2(alpha / max(1, comparisons))))


def runs_needed(*, n: int, change: float, half_width: float, half_width90: float, margin: float, minimum: int) -> int | None:
    """Blocks that would likely decide an unclear row, assuming the spread seen so far.

    Interval widths shrink as 1/sqrt(n): the row turns better/worse once the
    95% half-width drops below |change|, or same once |change| plus the 90%
    half-width fits inside the margin; the smaller of the two is reported.
    """
    if n < 2 or math.isnan(change):
        return None
    if math.isnan(half_width):  # too few blocks for any interval yet
        return minimum if minimum > n else None
    options = []
    if abs(change) > 0:
        options.append(n * (half_width / abs(change)) ** 2)
    if abs(change) < margin and not math.isnan(half_width90):
        options.append(n * (half_width90 / (margin - abs(change))) ** 2)
    if not options:
        return None
    needed = max(minimum, math.ceil(min(options)), n + 1)
    return needed if needed <= MAX_RUNS_NEEDED else None
