"""What storing one run costs the harness: `Store.record_run` per run, as the runner calls it.

Each run is its own transaction, committed before the next starts (what `--resume` and a
`kill -9` rely on), with the nine wait4 and memory metrics and the details a run of a
command workload stores. The harness's whole extra cost per run is measured by
bench/harness_overhead.py; this is the storing share of it.

    uv run python bench/store_speed.py [--runs 2000] [--db postgresql://...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchlab.metrics import Metric
from benchlab.store import Store

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]  # tests.conftest, when run as a script
from tests.conftest import experiment_rows  # noqa: E402 - how a test makes an experiment's rows

TARGET_MS = 0.3
METRICS = [
    ("wall", "s"), ("user", "s"), ("sys", "s"), ("max_rss", "KiB"), ("minor_faults", "count"),
    ("major_faults", "count"), ("voluntary_switches", "count"), ("involuntary_switches", "count"), ("tree_peak", "KiB"),
]  # fmt: skip
DETAILS = {
    "allocator": "glibc",
    "allocator_library": "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "machine": {"swap_kib": 0, "governor": "performance", "boost": True, "smt": True, "thp": "madvise"},
}


def measure(store: Store, runs: int) -> tuple[list[float], list[float]]:
    """Seconds per record_run call, wall-clock and CPU, one per run (the first runs register the
    metric names). CPU time is what other processes on a busy machine cannot inflate."""
    variants = ["a", "b"]
    spec = {"name": "speed", "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": v} for v in variants]}
    exp = store.create_experiment(**experiment_rows(spec, "command:true"))
    host = store.host_id({"hostname": "synthetic"})
    times, cpu = [], []
    for i in range(runs):
        metrics = [Metric(name, float(i + k), unit, "lower") for k, (name, unit) in enumerate(METRICS)]
        start, start_cpu = time.perf_counter(), time.process_time()
        store.record_run(
            exp, host_id=host, workload="w", variant=variants[i % 2], block=i // 2, warmup=False, position=i,
            status="ok", started_at=float(i), ended_at=i + 0.5, exit_code=0, metrics=metrics, details=DETAILS,
        )  # fmt: skip
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--db", help="a PostgreSQL URL of an empty database (default: a new SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(args.db or str(Path(tmp) / "speed.db"))
        times, cpu = measure(store, args.runs)
        store.engine.dispose()
    steady, steady_cpu = times[len(times) // 10 :], cpu[len(cpu) // 10 :]
    median_ms = statistics.median(steady) * 1000
    print(f"{args.runs} runs stored, one transaction each, {len(METRICS)} metrics and details per run (first 10% left out)")
    print(f"record_run per run: median {median_ms:.3f} ms, mean {statistics.fmean(steady) * 1000:.3f} ms wall-clock")
    print(f"                    mean {statistics.fmean(steady_cpu) * 1000:.3f} ms CPU")
    print(f"ratio of the median to the {TARGET_MS} ms target: {median_ms / TARGET_MS:.2f}")


if __name__ == "__main__":
    main()
