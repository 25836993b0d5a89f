"""How often `benchlab explain` names a function that did not change, and how often it finds one
that did: the false-attribution rate of per-function verdicts.

1. Simulated (`analysis.simulation.simulate_profiles`, the same simulator as the tests): eight
   functions holding 30% ... 2% of a 0.9 s run, sampled at 1 kHz, per run and function lognormal
   noise (2%, 5%, 10%, and 5% with t(3) heavy tails), per block a shared drift. A/A: the share of
   experiments with any function better or worse (target: at most 5%), per number of blocks;
   power: the share in which a function made 50% slower (+0.05 s, 5.6% of the run) is worse and
   on top of the table.
2. Real (`--real N`): N A/A experiments of the built-in alloc.churn, two identical variants,
   `--profile`, on this machine; the share with any function judged.

    uv run python bench/profile_aa.py [--experiments 400] [--noise 5% ...] [--at 8 20 ...] [--seed N] [--real 30]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchlab.analysis.profiles import judge_profiles
from benchlab.analysis.simulation import simulate_profiles
from benchlab.stats.judge import Settings

SECONDS = np.array([0.30, 0.20, 0.12, 0.10, 0.08, 0.05, 0.03, 0.02])
NOISE = {"2%": (0.02, 0.0), "5%": (0.05, 0.0), "10%": (0.10, 0.0), "5% t(3)": (0.05, 3.0)}
BLOCKS = (3, 5, 6, 8, 10, 20)
JUDGED = ("better", "worse")


def simulated(experiments: int, noises: list[str], blocks_list: list[int], seed: int) -> None:
    slower = SECONDS.copy()
    slower[3] *= 1.5
    print(f"simulated, {experiments} experiments per cell: A/A share with any function judged; power (f3 +50% found on top)")
    print(f"{'noise':>9} {'blocks':>6} {'A/A named':>10} {'power':>7}")
    for name, (noise, tails) in ((n, NOISE[n]) for n in noises):
        for blocks in blocks_list:
            rng = np.random.default_rng((seed, blocks, int(noise * 100)))
            named = found = 0
            for _ in range(experiments):
                aa = simulate_profiles(rng, {"A": SECONDS, "B": SECONDS}, blocks=blocks, noise=noise, tails=tails)
                rows = judge_profiles(aa, ["w"], ["A", "B"], Settings(baseline="A"), {}).rows
                named += any(r.verdict in JUDGED for r in rows if r.level == "function")
                ab = simulate_profiles(rng, {"A": SECONDS, "B": slower}, blocks=blocks, noise=noise, tails=tails)
                top = [
                    r for r in judge_profiles(ab, ["w"], ["A", "B"], Settings(baseline="A"), {}).rows if r.level == "function"
                ][0]
                found += top.name == "f3" and top.verdict == "worse"
            print(f"{name:>9} {blocks:>6} {named / experiments:>10.1%} {found / experiments:>7.1%}")


def real(experiments: int, blocks: int) -> None:
    benchlab = str(Path(sys.executable).parent / "benchlab")
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "BENCHLAB_DB": str(Path(folder) / "aa.db")}
        named = 0
        functions = []
        for i in range(experiments):
            name = f"aa-{i}"
            subprocess.run(
                [benchlab, "compare", "-w", "alloc.churn threads=1 ops=300000", "-V", "a", "-V", "b", "-n", str(blocks),
                 "--seed", str(i), "--profile", "--name", name],
                check=True, capture_output=True, env=env,
            )  # fmt: skip
            done = subprocess.run([benchlab, "explain", name, "--format", "json"], check=True, capture_output=True, env=env)
            rows = [r for r in json.loads(done.stdout)["rows"] if r["level"] == "function"]
            functions.append(len(rows))
            named += any(r["verdict"] in JUDGED for r in rows)
            print(
                f"  {name}: {len(rows)} functions judged, {'some' if any(r['verdict'] in JUDGED for r in rows) else 'none'} named"
            )
        print(
            f"real A/A, alloc.churn, {blocks} blocks: {named} of {experiments} experiments named a function "
            f"({named / experiments:.1%}); functions judged per experiment: median {int(np.median(functions))}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=400, help="simulated experiments per cell")
    parser.add_argument("--real", type=int, default=0, help="real A/A experiments to run on this machine (each ~15 s)")
    parser.add_argument("--blocks", type=int, default=5, help="blocks of each real experiment")
    parser.add_argument("--noise", nargs="+", choices=list(NOISE), default=list(NOISE), help="simulated noise models")
    parser.add_argument("--at", nargs="+", type=int, default=list(BLOCKS), help="simulated numbers of blocks")
    parser.add_argument("--seed", type=int, default=0, help="seeds the simulation (another seed, other experiments)")
    args = parser.parse_args()
    if args.experiments:
        simulated(args.experiments, args.noise, args.at, args.seed)
    if args.real:
        real(args.real, args.blocks)


if __name__ == "__main__":
    main()
