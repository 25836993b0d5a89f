"""The order of runs: interleaved blocks, so that drift cancels in the pairing.

Each block runs every variant of one workload once, close together in time.
With two variants consecutive blocks alternate AB, BA (ABBA); with more,
each block gets a fresh seeded permutation. Running all of A before all of
B is never offered: under drift it makes an A/A comparison look like a
change. Warm-up runs come first, one round per variant, flagged so they are
stored but never used as samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PlannedRun:
    workload: str
    variant: str
    block: int
    warmup: bool
    position: int

    @property
    def key(self) -> tuple[str, str, int, bool]:
        """What identifies a run across resumes and redeliveries."""
        return (self.workload, self.variant, self.block, self.warmup)


def block_orders(variants: list[str], blocks: int, rng: np.random.Generator) -> list[list[str]]:
    if len(variants) == 2:
        first = list(variants) if rng.integers(2) == 0 else list(reversed(variants))
        return [first if b % 2 == 0 else first[::-1] for b in range(blocks)]
    return [[variants[i] for i in rng.permutation(len(variants))] for _ in range(blocks)]


def make_plan(workloads: list[str], variants: list[str], *, blocks: int, warmup: int, seed: int) -> list[PlannedRun]:
    rng = np.random.default_rng(seed)
    order: list[tuple[str, str, int, bool]] = []
    for round_ in range(warmup):
        for workload in workloads:
            order += [(workload, v, round_, True) for v in variants]
    per_workload = {w: block_orders(variants, blocks, rng) for w in workloads}
    for block in range(blocks):
        for workload in workloads:
            order += [(workload, v, block, False) for v in per_workload[workload][block]]
    return [PlannedRun(w, v, b, warm, i) for i, (w, v, b, warm) in enumerate(order)]
