"""How often `benchlab explain` names a function that did not change, and how often it finds one
that did: the false-attribution rate of per-function verdicts.

1. Simulated (`analysis.simulation.simulate_profiles`, the same simulator as the tests): eight
   functions holding 30% ... 2% of a 0.9 s run, sampled at 1 kHz, per run and function lognormal
   noise (2%, 5%, 10%, and 5% with t(3) heavy tails), per block a shared drift. A/A: the share of
   experiments with any function better or worse (target: at most 5%), per number of blocks;
   power: the share in which a function made 50% slower (+0.05 s, 5.6% of the run) is worse and
   on top of the table.
2. Real (`--real N`): N A/A experiments of the built-in alloc.churn, two identical variants,
   profiled, on this machine; the share with any function judged.
3. `--off-cpu`: each simulated function also waits off the CPU as long as it runs, and the real
   experiments are of a pipe ping-pong with `profile.off_cpu`: an experiment names something
   where any function or wait is judged.

    uv run python bench/profile_aa.py [--experiments 400] [--noise 5% ...] [--at 8 20 ...] [--seed N] [--real 30] [--off-cpu]
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


def simulated(experiments: int, noises: list[str], blocks_list: list[int], seed: int, *, waits: bool) -> None:
    """With `waits`, each function also waits off the CPU as long as it runs: an A/A experiment
    counts as naming one where any function or wait is judged, and power is that of the waits."""
    slower = SECONDS.copy()
    slower[3] *= 1.5
    level = "off-cpu" if waits else "function"
    print(f"simulated, {experiments} experiments per cell{', with off-CPU waits' if waits else ''}: A/A share with any "
          f"function judged; power ({level} f3 +50% found on top)")  # fmt: skip
    print(f"{'noise':>9} {'blocks':>6} {'A/A named':>10} {'power':>7}")
    for name, (noise, tails) in ((n, NOISE[n]) for n in noises):
        for blocks in blocks_list:
            rng = np.random.default_rng((seed, blocks, int(noise * 100)))
            named = found = 0
            for _ in range(experiments):
                aa = simulate_profiles(rng, {"A": SECONDS, "B": SECONDS}, blocks=blocks, noise=noise, tails=tails, waits=waits)
                rows = judge_profiles(aa, ["w"], ["A", "B"], Settings(baseline="A"), {}).rows
                named += any(r.verdict in JUDGED for r in rows if r.level in ("function", "off-cpu"))
                ab = simulate_profiles(rng, {"A": SECONDS, "B": slower}, blocks=blocks, noise=noise, tails=tails, waits=waits)
                rows = judge_profiles(ab, ["w"], ["A", "B"], Settings(baseline="A"), {}).rows
                top = [r for r in rows if r.level == level][0]
                found += top.name == "f3" and top.verdict == "worse"
            print(f"{name:>9} {blocks:>6} {named / experiments:>10.1%} {found / experiments:>7.1%}")


REAL = {False: "alloc.churn threads=1 ops=300000", True: "ipc.pipe.pingpong roundtrips=3000"}  # the latter waits on pipes


def real(experiments: int, blocks: int, *, waits: bool) -> None:
    """With `waits`: A/A experiments of a pipe ping-pong, with off-CPU time recorded."""
    benchlab = str(Path(sys.executable).parent / "benchlab")
    workload = REAL[waits]
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "BENCHLAB_DB": str(Path(folder) / "aa.db")}
        named = 0
        functions = []
        for i in range(experiments):
            name = f"aa-{i}"
            builtin, *options = workload.split()
            table = ", ".join(option.replace("=", " = ") for option in options)
            spec = Path(folder) / f"{name}.toml"
            spec.write_text(
                f'name = "{name}"\nblocks = {blocks}\nseed = {i}\nprofile = {{ off_cpu = {str(waits).lower()} }}\n'
                f'[[workloads]]\nname = "w"\nbuiltin = "{builtin}"\noptions = {{ {table} }}\n'
                '[[variants]]\nname = "a"\n[[variants]]\nname = "b"\n'
            )
            subprocess.run([benchlab, "run", str(spec)], check=True, capture_output=True, env=env)
            done = subprocess.run([benchlab, "explain", name, "--format", "json"], check=True, capture_output=True, env=env)
            rows = [r for r in json.loads(done.stdout)["rows"] if r["level"] in ("function", "off-cpu")]
            functions.append(len(rows))
            named += any(r["verdict"] in JUDGED for r in rows)
            print(f"  {name}: {len(rows)} judged, {'some' if any(r['verdict'] in JUDGED for r in rows) else 'none'} named")
        print(
            f"real A/A, {workload}{', off-CPU too' if waits else ''}, {blocks} blocks: {named} of {experiments} experiments "
            f"named a function ({named / experiments:.1%}); rows judged per experiment: median {int(np.median(functions))}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=400, help="simulated experiments per cell")
    parser.add_argument("--real", type=int, default=0, help="real A/A experiments to run on this machine (each ~15 s)")
    parser.add_argument("--blocks", type=int, default=5, help="blocks of each real experiment")
    parser.add_argument("--noise", nargs="+", choices=list(NOISE), default=list(NOISE), help="simulated noise models")
    parser.add_argument("--at", nargs="+", type=int, default=list(BLOCKS), help="simulated numbers of blocks")
    parser.add_argument("--seed", type=int, default=0, help="seeds the simulation (another seed, other experiments)")
    parser.add_argument("--off-cpu", action="store_true", help="with off-CPU waits judged too (profile.off_cpu)")
    args = parser.parse_args()
    if args.experiments:
        simulated(args.experiments, args.noise, args.at, args.seed, waits=args.off_cpu)
    if args.real:
        real(args.real, args.blocks, waits=args.off_cpu)


if __name__ == "__main__":
    main()
