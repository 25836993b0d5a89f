"""Known changes on real commands at the run counts people use: is a consistent 2x change
called worse at 3, 4 and 5 blocks, with an interval, and does `--until-decided` stop early?

Cases (each repeated, every repetition a fresh experiment with its own seed):
- `sleep 0.1` against `sleep 0.2`;
- a Python loop of 1e6 against 2e6 iterations (CPU-bound, noisier).

    uv run python bench/known_changes.py [--repeats 6]

Prints, per case and number of blocks, how many experiments called the change worse and
the median change with its interval; then the blocks `--until-decided` stopped at.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CASES = {
    "sleep 0.1 vs 0.2": ('sh -c "sleep $D"', "D=0.1", "D=0.2"),
    "python loop 1e6 vs 2e6": (f"sh -c '{sys.executable} -c \"for _ in range(int($N)): pass\"'", "N=1e6", "N=2e6"),
}


def compare(command: str, base: str, other: str, *, db: str, seed: int, extra: list[str]) -> dict:
    argv = [
        os.path.join(os.path.dirname(sys.executable), "benchlab"), "compare", "--cmd", command, "-V", f"base: env.{base}",
        "-V", f"other: env.{other}", "--seed", str(seed), "--db", db, "--format", "json", *extra,
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def wall(report: dict) -> dict:
    return next(r for r in report["rows"] if r["metric"] == "wall")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=6)
    args = parser.parse_args()
    db = os.path.join(tempfile.mkdtemp(prefix="benchlab-known-"), "known.db")
    seed = 0
    print("| case | blocks | called worse | median change | its 95% intervals (lowest low, highest high) |")
    print("|---|---|---|---|---|")
    for name, (command, base, other) in CASES.items():
        for blocks in (3, 4, 5):
            rows = []
            for _ in range(args.repeats):
                seed += 1
                rows.append(wall(compare(command, base, other, db=db, seed=seed, extra=["-n", str(blocks)])))
            worse = sum(r["verdict"] == "worse" for r in rows)
            change = statistics.median(r["change"] for r in rows)
            lows = [r["change_ci"][0] for r in rows if r["change_ci"][0] is not None]
            highs = [r["change_ci"][1] for r in rows if r["change_ci"][1] is not None]
            interval = f"[{min(lows):+.1%}, {max(highs):+.1%}]" if lows and highs else "none"
            print(f"| {name} | {blocks} | {worse} of {len(rows)} | {change:+.1%} | {interval} |")
    print("\n| case | --until-decided: blocks at stop | verdicts |")
    print("|---|---|---|")
    for name, (command, base, other) in CASES.items():
        stops, verdicts = [], []
        for _ in range(args.repeats):
            seed += 1
            report = compare(command, base, other, db=db, seed=seed, extra=["--until-decided", "--max-blocks", "20"])
            stops.append(max(run["block"] for run in report["runs"]) + 1)
            verdicts.append(wall(report)["verdict"])
        print(f"| {name} | {', '.join(map(str, stops))} | {', '.join(verdicts)} |")


if __name__ == "__main__":
    main()
