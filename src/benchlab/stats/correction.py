"""Multiple-comparison corrections across every judged row of an experiment."""

from __future__ import annotations

import numpy as np
from scipy import stats


def adjust(pvalues: list[float], method: str) -> list[float]:
    """Adjusted p-values (q) for 'bh' (Benjamini-Hochberg), 'holm' or 'none'; NaN stays NaN.

    Holm is written out because scipy offers only the false-discovery methods.
    """
    p = np.asarray(pvalues, dtype=float)
    q = np.full_like(p, np.nan)
    valid = ~np.isnan(p)
    if not valid.any() or method == "none":
        return [float(x) for x in p]
    pv = p[valid]
    if method == "bh":
        q[valid] = stats.false_discovery_control(pv, method="bh")
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
