"""Change points of a history (one value per experiment, oldest first), found by Apache Otava.

Otava (the Hunter algorithm of Fleming et al., ICPE 2023: E-divisive over sliding windows,
candidates kept by a t-test, then the weakest merged away until every one left is
significant) is a maintained Apache project, runs in a few milliseconds on a history of
hundreds of points, and gives the same answer on every call (MongoDB's E-divisive, the other
well-kept implementation, decides by random permutations and pins numpy<2); bench/changepoints.py
compares them on histories with known steps (docs/commands/history.md#the-detector).
Otava loads only here, and only when a history is asked for: it costs about a second to
import, which no other command should pay.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MIN_POINTS = 3  # below this no split leaves a side with a spread to test


@dataclass(frozen=True)
class Settings:
    """What a change point must pass: Otava's t-test p, its smallest relative change
    (of the segment means, either way round) and the window it splits within."""

    max_pvalue: float = 0.001  # Otava's own default, as Hunter's authors run it
    min_change: float = 0.01  # benchlab's default equivalence margin: a smaller change reads "same" in a report
    window: int = 50


@dataclass(frozen=True)
class Found:
    index: int  # the first point after the change
    pvalue: float  # Otava's t-test between the segments either side


def change_points(values: Sequence[float], settings: Settings) -> list[Found]:
    """The change points of `values`, in order. A constant stretch has no spread to test, so
    Otava's t-test is undefined (NaN) there and such a point is dropped as not shown."""
    if len(values) < MIN_POINTS:
        return []
    from otava.analysis import compute_change_points

    found, _ = compute_change_points(
        [float(v) for v in values],
        window_len=settings.window,
        max_pvalue=settings.max_pvalue,
        min_magnitude=settings.min_change,
    )
    return [
        Found(int(c.index), float(c.stats.pvalue))
        for c in found
        if not math.isnan(c.stats.pvalue) and c.stats.pvalue <= settings.max_pvalue
    ]
