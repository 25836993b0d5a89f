"""Sequential mode: thresholds that hold while blocks are added until the verdicts decide.

Looking after every block and stopping at the first p below alpha makes false verdicts
common (22-29% of A/A experiments at 40 looks): each look is another chance. The looks
are calibrated instead, Pocock's way: a row's p at any look is turned into a
*sequential p*, the chance that under no change the smallest p over every look of the
budget (blocks `first` to `last`) would be this small. That sequential p is uniform or
larger under A/A whenever the experiment stops, so the usual correction and alpha apply
to it unchanged; the intervals are the matching repeated confidence intervals (their
level is the per-look level whose chance of any false verdict is alpha).

The distribution of the smallest p is simulated once per budget: the per-look test is
the one a report uses at that n (the paired t below SMALL_N pairs, the exact signed-rank
test from there on), and both are free of the noise's scale; the signed-rank test is
free of its shape too, and the t-test only grows more cautious with heavy tails. The
simulation is seeded, so every report of an experiment reads the same thresholds.
Hand-written because group-sequential libraries (R's gsDesign, rpact) assume normal
statistics at a handful of looks, not an exact rank test at every block.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from benchlab.stats.estimators import signed_rank_p_exact
from benchlab.terms import SMALL_N

PATHS = 100_000
SEED = 20261124
TAIL = 200  # below the TAIL-th smallest simulated minimum the estimate is extrapolated


def paired_p(d: np.ndarray) -> np.ndarray:
    """The p a report gives each row of d (paths x pairs), for the test it uses at that n."""
    n = d.shape[1]
    if n < SMALL_N:
        se = d.std(axis=1, ddof=1) / math.sqrt(n)
        return np.asarray(2 * special.stdtr(n - 1, -np.abs(d.mean(axis=1)) / se))  # 2 t.sf(|t|)
    ranks = np.argsort(np.argsort(np.abs(d), axis=1), axis=1) + 1
    return signed_rank_p_exact((ranks * (d > 0)).sum(axis=1), n)


@functools.cache
def _smallest_p(first: int, last: int) -> np.ndarray:
    """Sorted minima, over the looks first..last, of the per-look p on simulated A/A paths."""
    rng = np.random.default_rng(SEED)
    d = rng.standard_normal((PATHS, last))
    smallest = np.ones(PATHS)
    for n in range(first, last + 1):
        np.minimum(smallest, paired_p(d[:, :n]), out=smallest)
    return np.sort(smallest)


def sequential_p(p: np.ndarray | float, first: int, last: int) -> np.ndarray:
    """P(smallest p over the looks <= p) under no change: the p that optional stopping
    cannot inflate. Far in the tail, where the simulation is thin, it is extrapolated in
    proportion from the TAIL-th minimum, which overstates it (the ratio to the nominal p
    falls as p does, as Pocock's constants do), so the error stays on the safe side."""
    smallest = _smallest_p(first, last)
    p = np.asarray(p, dtype=float)
    found = np.searchsorted(smallest, p, side="right") / PATHS
    u0, f0 = smallest[TAIL], (TAIL + 1) / PATHS
    out = np.where(p < u0, f0 * p / u0, found)
    return np.clip(np.maximum(out, p), 0.0, 1.0)


def nominal_level(alpha: float, first: int, last: int) -> float:
    """The per-look level whose chance of any rejection over the looks is alpha: the
    largest simulated minimum with at most alpha of the paths at or below it."""
    smallest = _smallest_p(first, last)
    k = int(math.floor(alpha * PATHS))
    return float(smallest[k - 1]) if k >= 1 else alpha / (last - first + 1)


@functools.lru_cache(maxsize=256)  # a family's rows share one threshold
def nominal_threshold(level: float, first: int, last: int) -> float:
    """The largest p (a float) whose sequential p is at most `level`. sequential_p grows with p,
    so a p reaches `level` after the transformation exactly when it is at most this: a row's
    repeated interval read at this nominal threshold excludes zero exactly when its sequential p
    decides. Found by bisecting the floats' bit patterns (positive floats sort as their bits)."""
    if float(sequential_p(1.0, first, last)) <= level:
        return 1.0
    lo, hi = 0, int(np.float64(1.0).view(np.int64))  # sequential_p(0) = 0 <= level; at 1.0 it is above
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if float(sequential_p(float(np.int64(mid).view(np.float64)), first, last)) <= level:
            lo = mid
        else:
            hi = mid
    return float(np.int64(lo).view(np.float64))
