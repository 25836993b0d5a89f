"""Which metrics are judged, and in which family of comparisons each is corrected.

A command workload's outcome is its wall time; a workload that reports its own
numbers (the probe, a Google Benchmark binary) is judged on those: times,
rates, latency percentiles, scores. These form a workload's **primary**
family. The process's CPU time (user, sys, and wall where the workload has
its own timing) is the **secondary** family: it explains a change rather
than being one. Memory, faults, context switches and perf counts are
**characteristics**: shown with their change, never given a verdict, unless
the spec gives the metric a direction (`metrics = { tree_peak = { direction =
"lower" } }`), which puts it in the family the spec names (primary by
default). Judging them all in one correction was what made a consistent 2x
wall-time change wait for 9 blocks: nine rows where one mattered.

Each family is corrected on its own, at its share of alpha (`shares`), so
that the experiment as a whole keeps the design's promise: under A/A at
most alpha of experiments show any better or worse row.
"""

from __future__ import annotations

from typing import Any

from benchlab.metrics import CHARACTERISTICS, PROCESS_TIMES

PRIMARY, SECONDARY, CHARACTERISTIC, SCORED, GEOMEAN = "primary", "secondary", "characteristic", "scored", "geomean"
JUDGED = (PRIMARY, SECONDARY, GEOMEAN)
# alpha is shared among the families that can decide anything, in proportion to these
# weights: a workload's own outcome gets most of it
WEIGHTS = {PRIMARY: 4.0, SECONDARY: 1.0, GEOMEAN: 1.0}


def classify(workload: dict[str, Any] | None, metric: str, stored_direction: str) -> tuple[str, str]:
    """(family, direction) of one metric of one workload, from the stored spec's workload entry."""
    settings = ((workload or {}).get("metrics") or {}).get(metric) or {}
    if settings.get("direction") is not None:
        direction = settings["direction"]
        if direction == "none":
            return CHARACTERISTIC, direction
        return settings.get("family") or PRIMARY, direction
    if settings.get("family") is not None and stored_direction != "none":
        return settings["family"], stored_direction
    if stored_direction == "none" or metric in CHARACTERISTICS:
        return CHARACTERISTIC, stored_direction
    if metric == "wall":
        has_own_timing = workload is not None and not workload.get("command")
        return (SECONDARY if has_own_timing else PRIMARY), stored_direction
    if metric in PROCESS_TIMES:
        return SECONDARY, stored_direction
    return PRIMARY, stored_direction


def shares(alpha: float, families: list[str]) -> list[float]:
    """Each family's level: alpha split by WEIGHTS over the families given (those that can
    still decide something). The levels add up to alpha, so under A/A the chance of any
    false verdict in the experiment is at most alpha (a union over families, BH or Holm
    within each)."""
    total = sum(WEIGHTS[f] for f in families)
    return [alpha * WEIGHTS[f] / total for f in families] if total else []
