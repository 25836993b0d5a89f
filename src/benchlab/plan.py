"""The order of runs: interleaved blocks, so that drift cancels in the pairing.

Each block runs every variant of one workload once, close together in time.
With two variants consecutive blocks alternate AB, BA (ABBA); with more,
blocks cycle through a Williams design under a seeded relabelling: over each
cycle every variant runs in every position, and right after every other
variant, equally often. Random permutations leave that balance to chance,
and a carry-over effect (a run that leaves caches or CPU placement behind
for the next) then shows up as a difference between identical variants:
the demo's A/A column caught exactly that. Running all of A before all of B
is never offered: under drift it makes an A/A comparison look like a
change. Warm-up runs come first, one round per variant, flagged so they are
stored but never used as samples. Profiled runs (a workload's `profile`) follow the timed
runs of each block in the same order, so they pair by block too; they consume nothing of the
seeded order, which keeps the timed runs where they are without profiling.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PlannedRun:
    workload: str
    variant: str
    block: int
    warmup: bool
    position: int
    profiled: bool = False  # a run under the sampler: stored apart, never a sample of the metrics

    @property
    def key(self) -> tuple[str, str, int, bool, bool]:
        """What identifies a run across resumes and redeliveries."""
        return (self.workload, self.variant, self.block, self.warmup, self.profiled)


def williams_design(k: int) -> list[list[int]]:
    """Sequences of 0..k-1 balanced for position and immediate predecessor (Williams, 1949):
    k sequences for even k, 2k for odd k."""
    first = [0]
    for step in range(1, k):
        first.append((step + 1) // 2 if step % 2 else k - step // 2)
    rows = [[(v + shift) % k for v in first] for shift in range(k)]
    return rows if k % 2 == 0 else rows + [row[::-1] for row in rows]


def block_orders(variants: list[str], blocks: int, rng: np.random.Generator) -> list[list[str]]:
    if len(variants) == 2:
        first = list(variants) if rng.integers(2) == 0 else list(reversed(variants))
        return [first if b % 2 == 0 else first[::-1] for b in range(blocks)]
    labels = [variants[i] for i in rng.permutation(len(variants))]
    design = williams_design(len(variants))
    start = int(rng.integers(len(design)))
    return [[labels[i] for i in design[(start + b) % len(design)]] for b in range(blocks)]


def make_plan(
    workloads: list[str], variants: list[str], *, blocks: int, warmup: int, seed: int, profiled: Collection[str] = ()
) -> list[PlannedRun]:
    """`profiled`: the workloads whose blocks end with a profiled run of each variant."""
    rng = np.random.default_rng(seed)
    order: list[tuple[str, str, int, bool, bool]] = []
    for round_ in range(warmup):
        for workload in workloads:
            order += [(workload, v, round_, True, False) for v in variants]
    per_workload = {w: block_orders(variants, blocks, rng) for w in workloads}
    for block in range(blocks):
        for workload in workloads:
            order += [(workload, v, block, False, False) for v in per_workload[workload][block]]
            if workload in profiled:
                order += [(workload, v, block, False, True) for v in per_workload[workload][block]]
    return [PlannedRun(w, v, b, warm, i, prof) for i, (w, v, b, warm, prof) in enumerate(order)]
