"""How often `benchlab bisect` answers wrong, on simulated lists of variants with a known truth,
beside a bisection that looks at nominal alpha after every block (doubling runs until
something looks significant).

Each pair is a simulated sequential experiment as the tests use (runs in the real interleaved
plan order, a slow drift, lognormal noise), judged by the verdict rules at every look from
block 3 to 40, as `benchlab bisect` judges a real one. Lists of 3 to 17 variants; the first bad
one at a random place. A wrong answer names (or points at) another variant than the first bad
one, keeps a range without it, finds a change in a flat list, or none where there is one; a
`stopped` or `ends unclear` bisection that keeps the truth in its range is not wrong, only
undecided. Target: at most alpha (0.05) wrong in every scenario.

    uv run python bench/bisect_calibration.py [--bisects 200]
"""

from __future__ import annotations

import argparse
import collections
import time

import numpy as np

from benchlab.analysis.simulation import bisect_judge
from benchlab.stats.bisection import Outcome, bisect

ALPHA = 0.05
FIRST, LAST = 3, 40
SCENARIOS = {  # name -> (noise, the sizes of the steps on the log scale, each at a random place)
    "flat, 2% noise": (0.02, []),
    "flat, 5% noise": (0.05, []),
    "+10% step, 2% noise": (0.02, [np.log(1.10)]),
    "+10% step, 5% noise": (0.05, [np.log(1.10)]),
    "2x step, 5% noise": (0.05, [np.log(2.0)]),
    "two +5% steps, 2% noise": (0.02, [np.log(1.05), np.log(1.05)]),
}


def wrong(out: Outcome, truth: int | None) -> bool:
    if truth is None:
        return out.status not in ("no change", "ends unclear")
    if out.status in ("found", "unconfirmed", "contradicted"):
        return out.first_bad != str(truth)
    if out.status == "stopped":
        return str(truth) not in out.remaining
    return out.status != "ends unclear"


def run(name: str, bisects: int, rng: np.random.Generator, *, naive: bool) -> str:
    noise, steps = SCENARIOS[name]
    statuses: collections.Counter[str] = collections.Counter()
    errors, blocks = 0, []
    for _ in range(bisects):
        n = int(rng.integers(3, 18))
        places = sorted(int(rng.integers(1, n)) for _ in steps)
        levels = [sum(size for size, at in zip(steps, places, strict=True) if i >= at) for i in range(n)]
        truth = places[0] if places else None
        names = [str(i) for i in range(n)]
        nominal = ALPHA if naive else None
        out = bisect(names, bisect_judge(rng, levels, noise=noise, first=FIRST, last=LAST, nominal_alpha=nominal), alpha=ALPHA)
        statuses[out.status] += 1
        errors += wrong(out, truth)
        blocks.append(sum(s.judgement.blocks for s in out.steps))
    shown = ", ".join(f"{k} {v}" for k, v in statuses.most_common())
    who = "nominal looks" if naive else "benchlab"
    return f"{name:<26} {who:<14} wrong {errors / bisects:6.1%}  blocks/bisect {np.mean(blocks):5.1f}  ({shown})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bisects", type=int, default=200)
    parser.add_argument("--naive", action="store_true", help="also the bisection that looks at nominal alpha")
    args = parser.parse_args()
    rng = np.random.default_rng(20261127)
    start = time.time()
    print(f"{args.bisects} simulated bisections per scenario, 3-17 variants, alpha {ALPHA}, looks at blocks {FIRST}-{LAST}")
    for name in SCENARIOS:
        print(run(name, args.bisects, rng, naive=False), flush=True)
        if args.naive:
            print(run(name, args.bisects, rng, naive=True), flush=True)
    print(f"({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
