"""How often `benchlab diff` (unpaired: Mann-Whitney U with the two-sample Hodges-Lehmann shift)
is wrong or right on simulated diffs with a known truth, beside the paired comparison the same
runs would get as variants of one experiment.

1. A/A: the share of diffs with any better/worse row (wall primary, user and sys secondary), per
   runs on each side and noise (target: at most 5% everywhere);
2. power: the share of diffs that call a +5% or +10% wall-time change "worse", unpaired, and
   (for scale) paired in one experiment of as many blocks without drift.

    uv run python bench/diff_calibration.py [--diffs 400]
"""

from __future__ import annotations

import argparse

import numpy as np

from benchlab.analysis.simulation import simulate, simulate_diff
from benchlab.stats.judge import Row, Settings, judge

RUNS = ((5, 5), (8, 8), (10, 10), (20, 20), (10, 30))
NOISE = (0.02, 0.05, 0.10)


def _any_decided(rows: list[Row]) -> bool:
    return any(r.verdict in ("better", "worse") for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--diffs", type=int, default=400)
    n = parser.parse_args().diffs
    rng = np.random.default_rng(2026)
    print(f"A/A: share of {n} diffs with any better/worse row (target <= 5%)")
    print("runs A+B " + "".join(f"{f'noise {s:.0%}':>12}" for s in NOISE))
    for runs in RUNS:
        rates = []
        for noise in NOISE:
            false = sum(_any_decided(simulate_diff(rng, runs=runs, noise=noise)) for _ in range(n))
            rates.append(false / n)
        print(f"{runs[0]:>3}+{runs[1]:<4} " + "".join(f"{r:>12.1%}" for r in rates))
    print(f"\npower at 5% noise: share of {n} diffs calling the wall-time change 'worse'")
    print("runs A+B      +5% unpaired   +5% paired  +10% unpaired  +10% paired")
    for runs in RUNS[:4]:
        cells = []
        for shift in (0.05, 0.10):
            log = float(np.log1p(shift))
            unpaired = sum(simulate_diff(rng, runs=runs, noise=0.05, shift=log)[0].verdict == "worse" for _ in range(n))
            paired = 0
            for _ in range(n):
                series = simulate(rng, metrics=1, blocks=runs[0], noise=0.05, shifts=[log], drift=0.0)
                rows, _ = judge(series, ["A", "B"], Settings(baseline="A"))
                paired += rows[0].verdict == "worse"
            cells += [unpaired / n, paired / n]
        print(f"{runs[0]:>3}+{runs[1]:<4} " + "".join(f"{c:>14.1%}" for c in cells))


if __name__ == "__main__":
    main()
