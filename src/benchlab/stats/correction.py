"""Multiple-comparison corrections across every judged row of an experiment."""

from __future__ import annotations

import numpy as np


def adjust(pvalues: list[float], method: str) -> list[float]:
    """Adjusted p-values (q) for 'bh' (Benjamini-Hochberg), 'holm' or 'none'; NaN stays NaN.

    Both are written out: scipy offers no Holm, and its Benjamini-Hochberg
    (`scipy.stats.false_discovery_control`, whose steps `_benjamini_hochberg` follows) would
    cost every report scipy.stats's import, 0.3-0.5 s of CPU, for five lines of numpy.
    """
    p = np.asarray(pvalues, dtype=float)
    q = np.full_like(p, np.nan)
    valid = ~np.isnan(p)
    if not valid.any() or method == "none":
        return [float(x) for x in p]
    pv = p[valid]
    if method == "bh":
        q[valid] = _benjamini_hochberg(pv)
    elif method == "holm":
        order = np.argsort(pv)
        m = len(pv)
        stepped = np.maximum.accumulate((m - np.arange(m)) * pv[order])
        out = np.empty(m)
        out[order] = np.minimum(stepped, 1.0)
        q[valid] = out
    else:
        raise ValueError(f"unknown correction {method!r}")
    return [float(x) for x in q]


def _benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Each p times m over its rank, then the smallest of those at or above its rank, capped at 1."""
    if len(p) <= 1:
        return p.copy()
    order = np.argsort(p)
    q = p[order] * (len(p) / np.arange(1, len(p) + 1))
    np.minimum.accumulate(q[::-1], out=q[::-1])
    out = np.empty_like(q)
    out[order] = q
    return np.clip(out, 0, 1)
