"""How often the verdicts are wrong or right on simulated experiments with a known truth.

The same simulation as the tests (interleaved plan, slow drift, lognormal
noise), printed as rates so a change to the statistics shows its effect:
the share of A/A experiments with any better/worse row (target <= 5%), and
the share of 3% shifts found with 10 blocks (target >= 90%).

    uv run python bench/verdict_calibration.py [--experiments 2000]
"""

from __future__ import annotations

import argparse

import numpy as np

from benchlab.stats.analysis import Settings, judge
from benchlab.stats.simulation import simulate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--experiments", type=int, default=2000)
    args = parser.parse_args()
    settings = Settings(baseline="A")
    rng = np.random.default_rng(1)
    false = same = 0
    for _ in range(args.experiments):
        rows, _ = judge(simulate(rng, metrics=20, blocks=10, noise=0.02, shifts=[0.0] * 20, drift=0.05), ["A", "B"], settings)
        false += any(r.verdict in ("better", "worse") for r in rows)
        same += sum(r.verdict == "same" for r in rows)
    print(f"A/A, {args.experiments} experiments x 20 metrics, 10 blocks, 2% noise, 5% drift:")
    print(f"  experiments with any better/worse: {false / args.experiments:.2%} (target <= 5%)")
    print(f"  rows judged same: {same / (20 * args.experiments):.1%} (the rest unclear)")
    found = 0
    trials = args.experiments // 4
    for _ in range(trials):
        rows, _ = judge(simulate(rng, metrics=1, blocks=10, noise=0.01, shifts=[np.log(1.03)], drift=0.05), ["A", "B"], settings)
        found += rows[0].verdict == "worse"
    print(f"3% slowdown, 1% noise, 10 blocks: found in {found / trials:.1%} of {trials} experiments (target >= 90%)")


if __name__ == "__main__":
    main()
