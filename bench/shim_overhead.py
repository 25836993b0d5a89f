"""What merely installing the allocator shim costs: `alloc.churn` with no shim against the
shim preloaded with sampling off (BENCHLAB_SHIM_SAMPLING=0), interleaved as a benchlab
experiment, and the paired change of its CPU time per allocation with a 95% interval
(target: under 2%). One sampled rate is run beside them for scale.

    uv run python bench/shim_overhead.py [--blocks 15] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from benchlab.analysis.analyze import analyze
from benchlab.runner import Prepared, Runner
from benchlab.spec.validate import spec_from_dict
from benchlab.store import Store

TARGET = 0.02
# instructions (where the machine has a PMU) show the added work even when a shared host makes times noisy
METRICS = ("cpu_time", "real_time", "instructions")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ops", type=int, default=1_000_000)
    args = parser.parse_args()
    spec = spec_from_dict(
        {
            "name": "shim-overhead",
            "blocks": args.blocks,
            "warmup": 1,
            "workloads": [
                {
                    "name": "churn",
                    "builtin": "alloc.churn",
                    "options": {"threads": args.threads, "ops": args.ops},
                    "perf_counters": True,
                }
            ],
            "variants": [
                {"name": "no-shim"},
                {"name": "noop-shim", "shim": {"sampling": 0}},
                {"name": "sampling-1000", "shim": {"sampling": 1000}},
            ],
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["BENCHLAB_STATE_DIR"] = tmp
        store = Store(str(Path(tmp) / "shim.db"))
        analysis = analyze(store.load(Runner(store).run(Prepared.from_spec(spec))))
    print(f"alloc.churn, {args.threads} thread(s), {args.ops} allocations each; {args.blocks} interleaved blocks")
    for row in analysis.rows:
        if row.metric in METRICS:
            low, high = row.change_ci
            print(
                f"{row.metric:>12} {row.variant:<14} median {row.median:11.4g} vs {row.baseline_median:11.4g} {row.unit}: "
                f"{row.change:+.2%} [95% CI {low:+.2%}, {high:+.2%}] {row.verdict}"
            )
    noop = next(r for r in analysis.rows if r.metric == "cpu_time" and r.variant == "noop-shim")
    met = "met" if noop.change < TARGET else "NOT met"
    print(
        f"no-op shim overhead (cpu_time): {noop.change:+.2%}, upper bound {noop.change_ci[1]:+.2%} (target < {TARGET:.0%}: {met})"
    )


if __name__ == "__main__":
    main()
