"""benchlab's cost per run against hyperfine -N, on a trivial command, in one script run.

benchlab's per-run cycle is read from its own stored timestamps (start of the
first run to the end of the last, over the runs in between): launch, wait4,
metric collection and the database commit all fall inside it. hyperfine's
mean per run of the same command is its own spawn and wait. The difference
is benchlab's extra cost per run; the target is at most 0.5 ms (issue 30; 1.5 ms before).

The two are measured in turn, `--repeats` times, and the medians of the
repeats are the result: on a shared machine one repeat can land on a busy
moment that the other tool missed.

    uv run python bench/harness_overhead.py [--runs 200] [--repeats 3] [--command /bin/true]
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

from benchlab.store import Store

TARGET_MS = 0.5  # issue 30: hyperfine's cost, every run still committed as it ends


def benchlab_cycle_ms(command: str, runs: int) -> float:
    """benchlab's mean cycle per run (launch, wait4, metrics, commit) from its stored timestamps."""
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "overhead.db")
        benchlab = str(Path(sys.executable).parent / "benchlab")
        subprocess.run(
            [benchlab, "compare", "--cmd", command, "--variant", "a", "-n", str(runs), "--name", "overhead",
             "--db", db, "--format", "csv"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "BENCHLAB_STATE_DIR": tmp},
        )  # fmt: skip
        store = Store(db)
        data = store.load(store.require_experiment("overhead"), every_record=True)
        runs_ = sorted(data.records, key=lambda r: r.started_at)
        return (runs_[-1].ended_at - runs_[0].started_at) / len(runs_) * 1000


def hyperfine_ms(hyperfine: str, command: str, runs: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / "hf.json"
        subprocess.run(
            [hyperfine, "-N", "--runs", str(runs), "--warmup", "10", "--export-json", str(export), command],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        mean_s: float = json.loads(export.read_text())["results"][0]["mean"]
        return mean_s * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--command", default="/bin/true")
    args = parser.parse_args()
    hyperfine = shutil.which("hyperfine")
    if hyperfine is None:
        sys.exit("hyperfine is not installed: apt-get install hyperfine")
    cycles, spawns = [], []
    for repeat in range(args.repeats):
        cycles.append(benchlab_cycle_ms(args.command, args.runs))
        spawns.append(hyperfine_ms(hyperfine, args.command, args.runs))
        print(f"repeat {repeat + 1}: benchlab {cycles[-1]:.3f} ms, hyperfine -N {spawns[-1]:.3f} ms per run")
    cycle_ms, hf_ms = statistics.median(cycles), statistics.median(spawns)
    extra = statistics.median(c - h for c, h in zip(cycles, spawns, strict=True))
    print(f"command: {args.command}, {args.runs} runs each, median of {args.repeats} repeats")
    print(f"benchlab per run (launch + wait4 + commit): {cycle_ms:.3f} ms")
    print(f"hyperfine -N per run:                       {hf_ms:.3f} ms")
    print(f"ratio benchlab/hyperfine: {cycle_ms / hf_ms:.2f}")
    print(f"extra per run: {extra:.3f} ms (target <= {TARGET_MS} ms: {'met' if extra <= TARGET_MS else 'NOT met'})")


if __name__ == "__main__":
    main()
