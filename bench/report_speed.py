"""How long the analysis and the table take on 100,000 stored runs (target: under 1 s).

Builds a synthetic experiment straight into a SQLite file (5 workloads x
4 variants x 5,000 blocks, the eight wait4 metrics and the details the runner
records with each), then times loading,
judging and rendering it, as `benchlab report` does: the best of --repeat
rounds of each step, so that a shared machine's bursts do not count.

    uv run python bench/report_speed.py [--blocks 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sqlalchemy import insert, select

from benchlab.analysis.analyze import analyze
from benchlab.report import render
from benchlab.store import Store
from benchlab.store import schema as t

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]  # tests.conftest, when run as a script
from tests.conftest import experiment_rows  # noqa: E402 - how a test makes an experiment's rows

TARGET_S = 1.0
DETAILS = json.dumps({"allocator": "glibc", "allocator_library": "/usr/lib/x86_64-linux-gnu/libc.so.6",
                      "machine": {"boost": None, "governor": None, "smt": False, "swap_kib": 0, "thp": "madvise"}},
                     sort_keys=True)  # fmt: skip
METRICS = ["wall", "user", "sys", "max_rss", "minor_faults", "major_faults", "voluntary_switches", "involuntary_switches"]


def build(store: Store, blocks: int) -> None:
    workloads = [f"w{i}" for i in range(5)]
    variants = ["base", "v1", "v2", "v3"]
    spec = {"name": "big", "workloads": [{"name": w, "command": ["true"]} for w in workloads],
            "variants": [{"name": v} for v in variants], "blocks": blocks}  # fmt: skip
    exp = store.create_experiment(**experiment_rows(spec, "command:x"))
    host = store.host_id({"hostname": "synthetic"})
    with store.engine.begin() as conn:
        conn.execute(
            insert(t.metric_name),
            [
                {"workload_id": exp.workload_ids[w], "name": m, "unit": "s", "direction": "lower"}
                for w in workloads
                for m in METRICS
            ],
        )
        rows = conn.execute(select(t.metric_name.c.workload_id, t.metric_name.c.name, t.metric_name.c.id)).all()
        workload_of = {i: w for w, i in exp.workload_ids.items()}
        name_ids = {(workload_of[w], m): i for w, m, i in rows}
    rng = np.random.default_rng(1)
    run_rows, metric_rows = [], []
    run_id = 0
    for w in workloads:
        for b in range(blocks):
            for i, v in enumerate(variants):
                run_id += 1
                run_rows.append({"id": run_id, "uuid": f"{run_id:036d}", "experiment_id": exp.id,
                                 "workload_id": exp.workload_ids[w], "variant_id": exp.variant_ids[v], "host_id": host,
                                 "block": b, "warmup": False, "position": run_id, "status": "ok",
                                 "started_at": float(run_id), "ended_at": run_id + 0.5, "exit_code": 0,
                                 "workload_version": "command:x"})  # fmt: skip
                values = rng.lognormal(0, 0.02, len(METRICS)) * (1 + 0.01 * i)
                metric_rows += [{"run_id": run_id, "name_id": name_ids[(w, m)], "value": float(x)}
                                for m, x in zip(METRICS, values, strict=True)]  # fmt: skip
    with store.engine.begin() as conn:
        conn.execute(insert(t.run), run_rows)
        conn.execute(insert(t.run_detail), [{"run_id": row["id"], "details": DETAILS} for row in run_rows])
        conn.execute(insert(t.metric), metric_rows)
    print(f"stored {len(run_rows):,} runs and {len(metric_rows):,} metric values")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    best = [float("inf")] * 3
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "big.db"))
        build(store, args.blocks)
        for _ in range(args.repeat):
            start = time.perf_counter()
            data = store.load(store.require_experiment("big"))
            loaded = time.perf_counter()
            report = analyze(data).report()
            judged = time.perf_counter()
            render(report, "table")
            done = time.perf_counter()
            best = [min(b, t) for b, t in zip(best, (loaded - start, judged - loaded, done - judged), strict=True)]
    load, analyse, draw = best
    print(f"load {load:.2f} s, analyse {analyse:.2f} s, render {draw:.2f} s (best of {args.repeat})")
    total = load + analyse + draw
    print(f"total {total:.2f} s for {len(data.runs):,} runs; ratio to the {TARGET_S} s target: {total / TARGET_S:.2f}")


if __name__ == "__main__":
    main()
