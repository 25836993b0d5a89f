"""Run-to-run noise of every CPU-suite workload, single-core, on this machine: the robust
coefficient of variation (1.4826 x MAD / median) of its throughput over interleaved runs,
and the suite's time per block. Target on a quiet machine: under 2% per workload.

    uv run python bench/cpu_noise.py [--blocks 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from suite_runs import single_core_samples

TARGET = 0.02


def robust_cv(values: list[float]) -> float:
    median = statistics.median(values)
    return 1.4826 * statistics.median(abs(v - median) for v in values) / median


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=10)
    args = parser.parse_args()
    started = time.monotonic()
    samples = single_core_samples(args.blocks)
    elapsed = time.monotonic() - started
    load = os.getloadavg()[0]
    print(f"{len(samples)} workloads x {args.blocks} single-core runs in {elapsed:.0f} s; load average {load:.2f}")
    print(f"{'workload':24} {'median':>12} {'robust CV':>10}  target < {TARGET:.0%}")
    met = 0
    for name, values in samples.items():
        cv = robust_cv(values)
        met += cv < TARGET
        print(f"{name:24} {statistics.median(values):12.4g} {cv:10.2%}  {'met' if cv < TARGET else 'NOT met'}")
    print(f"{met} of {len(samples)} workloads under {TARGET:.0%}")


if __name__ == "__main__":
    main()
