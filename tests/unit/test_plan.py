from __future__ import annotations

import itertools
from collections import Counter

import pytest

from benchlab.plan import make_plan, williams_design


def test_two_variants_alternate_abba() -> None:
    plan = make_plan(["w"], ["A", "B"], blocks=6, warmup=0, seed=3)
    orders = ["".join(r.variant for r in plan if r.block == b) for b in range(6)]
    assert orders[0] in ("AB", "BA")
    assert all(orders[i] != orders[i + 1] for i in range(5))


def test_every_block_runs_every_variant_once_and_warmups_come_first() -> None:
    plan = make_plan(["w1", "w2"], ["A", "B", "C"], blocks=5, warmup=2, seed=1)
    warm = [r for r in plan if r.warmup]
    assert len(warm) == 2 * 2 * 3 and plan[: len(warm)] == warm
    samples = Counter((r.workload, r.block) for r in plan if not r.warmup)
    assert set(samples.values()) == {3}
    assert [r.position for r in plan] == list(range(len(plan)))


def test_orders_are_seeded_and_vary_between_blocks() -> None:
    first = make_plan(["w"], list("ABCD"), blocks=20, warmup=0, seed=42)
    again = make_plan(["w"], list("ABCD"), blocks=20, warmup=0, seed=42)
    other = make_plan(["w"], list("ABCD"), blocks=20, warmup=0, seed=43)
    assert first == again and first != other
    firsts = Counter(next(r.variant for r in first if r.block == b) for b in range(20))
    assert len(firsts) >= 3  # no variant is always first


@pytest.mark.parametrize("k", [3, 4, 5, 6])
def test_williams_design_balances_positions_and_predecessors(k: int) -> None:
    design = williams_design(k)
    assert all(sorted(row) == list(range(k)) for row in design)
    positions = Counter((pos, v) for row in design for pos, v in enumerate(row))
    assert len(set(positions.values())) == 1 and len(positions) == k * k
    pairs = Counter((a, b) for row in design for a, b in itertools.pairwise(row))
    assert len(pairs) == k * (k - 1) and len(set(pairs.values())) == 1


def test_three_variants_cycle_through_a_balanced_design() -> None:
    plan = make_plan(["w"], ["A", "B", "C"], blocks=12, warmup=0, seed=5)
    orders = ["".join(r.variant for r in plan if r.block == b) for b in range(12)]
    follows = Counter((o[i], o[i + 1]) for o in orders for i in range(2))
    assert len(follows) == 6 and len(set(follows.values())) == 1
