"""The `cpus` field: the CPUs a workload may run on (affinity, inherited by its children)."""

from __future__ import annotations

import os

from benchlab.errors import SpecError


def affinity_for(cpus: list[int] | None, where: str) -> frozenset[int] | None:
    if cpus is None:
        return None
    allowed = os.sched_getaffinity(0)
    outside = sorted(set(cpus) - allowed)
    if outside:
        raise SpecError(
            f"CPU {', '.join(map(str, outside))} is not available here (usable: {','.join(map(str, sorted(allowed)))})",
            where=where,
        )
    return frozenset(cpus)
