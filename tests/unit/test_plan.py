from __future__ import annotations

from collections import Counter

from benchlab.plan import make_plan


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
