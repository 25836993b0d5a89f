"""Measures the CPU suite's score baseline on this machine and writes the data file.

Every suite workload runs single-core, interleaved in blocks like any benchlab
experiment; the baseline of a workload is the median of its throughputs, and
the file keeps every sample, the suite and workload versions, the machine and
this command, so a score can always be traced to the runs behind it.

    uv run python bench/cpu_baseline.py [--blocks 15] [--out src/benchlab/suite/cpu-baseline.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from suite_runs import single_core_samples, suite_tasks

from benchlab.measure.host import fingerprint

WEIGHTS = {"crypto": 0.05, "integer": 0.65, "floating_point": 0.30}  # Geekbench 5's


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--out", type=Path, default=Path("src/benchlab/suite/cpu-baseline.json"))
    args = parser.parse_args()
    tasks = suite_tasks()
    suite_versions = {info["suite_version"] for info in tasks.values()}
    if len(suite_versions) != 1:
        sys.exit(f"the probe reports several suite versions: {suite_versions}")
    samples = single_core_samples(args.blocks)
    host = fingerprint()
    data = {
        "suite": "cpu",
        "suite_version": suite_versions.pop(),
        "weights": WEIGHTS,
        "machine": {k: host[k] for k in ("cpu_model", "cpus_online", "memory_kib", "kernel", "virtualization", "arch")},
        "measured": {
            "date": datetime.date.today().isoformat(),
            "command": f"uv run python bench/cpu_baseline.py --blocks {args.blocks}",
            "how": "single-core, one thread per run, interleaved blocks after one warm-up; baseline = median",
        },
        "workloads": {
            name: {
                "section": info["section"],
                "version": info["version"],
                "work_unit": info["work_unit"],
                "modes": info["modes"],
                "iterations": info["iterations"],
                "samples": samples[name],
            }
            for name, info in tasks.items()
        },
    }
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.out}: {len(tasks)} workloads, {args.blocks} samples each")


if __name__ == "__main__":
    main()
