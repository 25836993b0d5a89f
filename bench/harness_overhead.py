"""benchlab's cost per run against hyperfine -N, on a trivial command, in one script run.

benchlab's per-run cycle is read from its own stored timestamps (start of the
first run to the end of the last, over the runs in between): launch, wait4,
metric collection and the database commit all fall inside it. hyperfine's
mean per run of the same command is its own spawn and wait. The difference
is benchlab's extra cost per run; the target is under 3 ms.

    uv run python bench/harness_overhead.py [--runs 300] [--command /bin/true]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlab.stats.analysis import analyze
from benchlab.store import Store

TARGET_MS = 3.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--command", default="/bin/true")
    args = parser.parse_args()
    hyperfine = shutil.which("hyperfine")
    if hyperfine is None:
        sys.exit("hyperfine is not installed: apt-get install hyperfine")
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "overhead.db")
        benchlab = str(Path(sys.executable).parent / "benchlab")
        subprocess.run(
            [benchlab, "compare", "--cmd", args.command, "--variant", "a", "-n", str(args.runs), "--name", "overhead",
             "--db", db, "--format", "csv"],
            check=True, stdout=subprocess.DEVNULL, env={**os.environ, "BENCHLAB_STATE_DIR": tmp},
        )  # fmt: skip
        store = Store(db)
        runs = sorted(analyze(store.load(store.require_experiment("overhead"))).runs, key=lambda r: r.started_at)
        cycle_ms = (runs[-1].ended_at - runs[0].started_at) / len(runs) * 1000
        export = Path(tmp) / "hf.json"
        subprocess.run(
            [hyperfine, "-N", "--runs", str(args.runs), "--warmup", "10", "--export-json", str(export), args.command],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        hf_ms = json.loads(export.read_text())["results"][0]["mean"] * 1000
    extra = cycle_ms - hf_ms
    print(f"command: {args.command}, {args.runs} runs each")
    print(f"benchlab per run (launch + wait4 + commit): {cycle_ms:.3f} ms")
    print(f"hyperfine -N per run:                       {hf_ms:.3f} ms")
    print(f"ratio benchlab/hyperfine: {cycle_ms / hf_ms:.2f}")
    print(f"extra per run: {extra:.3f} ms (target < {TARGET_MS} ms: {'met' if extra < TARGET_MS else 'NOT met'})")


if __name__ == "__main__":
    main()
