"""How long `benchlab score` takes on this machine, in one run of each form: `--quick` (target
under 40 s on 2 cores) and the full suite, single- and multi-core with shared-task runs
(target under 3 minutes). Each runs the real CLI against a throw-away database; the figures
are wall times of the whole command, warm-ups and the report included, and the suite's wall
time as the report states it (the median over blocks of one block's runs, summed).

    uv run python bench/suite_time.py [--only quick|full]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"quick": 40.0, "full": 180.0}
BENCHLAB = str(Path(sys.executable).with_name("benchlab"))  # the command installed beside this Python
ARGS = {"quick": ["--quick"], "full": []}


def timed(form: str, tmp: Path) -> tuple[float, float | None]:
    """Seconds the command took, and the suite wall time per block its report gives."""
    env = {**os.environ, "BENCHLAB_STATE_DIR": str(tmp / "state")}
    command = [BENCHLAB, "score", *ARGS[form], "--db", str(tmp / f"{form}.db"), "--format", "json"]
    started = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"benchlab score {' '.join(ARGS[form])} failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    rows = json.loads(proc.stdout)["scores"]["rows"]
    suite = next((r["score"] for r in rows if r["level"] == "suite" and r["unit"] == "s"), None)
    return elapsed, suite


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=sorted(TARGETS))
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        for form in [args.only] if args.only else ["quick", "full"]:
            elapsed, suite = timed(form, Path(tmp))
            ratio = elapsed / TARGETS[form]
            runs = f"; one block's runs {suite:.1f} s" if suite is not None else ""
            verdict = "met" if ratio <= 1 else "NOT met"
            print(f"score {form:5}: {elapsed:6.1f} s{runs}; target {TARGETS[form]:.0f} s: {ratio:.2f} of it, {verdict}")


if __name__ == "__main__":
    main()
