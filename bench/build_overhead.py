"""`sys.build` against a plain `make -jN` of the same generated tree, in one script run.

hyperfine times `make -s -jN` after a `make -s clean` prepare step (its usual
way of timing builds); the probe's `sys.build` times the same command after
its own untimed clean. Rounds alternate between the two in ABBA order, so
that drift and order hit both; each round's ratio pairs two neighbouring
builds, and the median ratio is reported (a build on this shared host varies
by 10-20% from one to the next). benchlab's own measurement overhead (the
fork into a PID namespace, the wait for the whole tree, the clock reads) is
the difference; the target is under 2%.

    uv run python bench/build_overhead.py [--rounds 20] [--units 60]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlab.locate import probe_path

TARGET = 0.02


def probe_build(folder: Path, units: int, jobs: int) -> float:
    argv = [probe_path(), "sys.build", "--units", str(units), "--jobs", str(jobs), "--dir", str(folder), "--format", "json"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return float(json.loads(out)["benchmarks"][0]["real_time"]) / 1e9


def hyperfine_build(folder: Path, jobs: int, export: Path) -> float:
    subprocess.run(
        ["hyperfine", "-N", "--runs", "1", "--prepare", "make -s clean", "--export-json", str(export), f"make -s -j{jobs} CC=cc"],
        cwd=folder, capture_output=True, check=True,
    )  # fmt: skip
    return float(json.loads(export.read_text())["results"][0]["mean"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--units", type=int, default=60)
    args = parser.parse_args()
    if shutil.which("hyperfine") is None:
        sys.exit("hyperfine is not installed: apt-get install hyperfine")
    jobs = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "project"
        probe_build(folder, args.units, jobs)  # generates the tree; also warms the page cache
        ours, theirs = [], []
        for round_ in range(args.rounds):
            first_theirs = round_ % 2 == 0  # ABBA: neither tool always follows the other
            if first_theirs:
                theirs.append(hyperfine_build(folder, jobs, Path(tmp) / "hyperfine.json"))
            ours.append(probe_build(folder, args.units, jobs))
            if not first_theirs:
                theirs.append(hyperfine_build(folder, jobs, Path(tmp) / "hyperfine.json"))
    h, b = statistics.median(theirs), statistics.median(ours)
    ratio = statistics.median(o / t for o, t in zip(ours, theirs, strict=True))
    print(f"make -j{jobs} of {args.units} units, {args.rounds} alternating rounds")
    print(
        f"median build: hyperfine {h:.3f} s, sys.build {b:.3f} s; median of the rounds' ratios {ratio:.4f}: "
        f"overhead {ratio - 1:+.2%} (target under {TARGET:.0%}: {'met' if ratio - 1 < TARGET else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
