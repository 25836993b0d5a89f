"""cpu.text_compression's zstd part against zstd's own benchmark (`zstd -b3`), on the same
corpus and level, interleaved in one script run; prints the ratio (target: within 10%).

The probe's `--part 0` runs only the zstd half of the task (compress, decompress, check);
its throughput counts the text's bytes once per compress-and-decompress, so zstd -b's two
speeds are combined the same way: 1 / (1/compression + 1/decompression).

    uv run python bench/zstd_compare.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlab.locate import probe_path

TARGET = 0.10
SPEEDS = re.compile(r"([\d.]+) MB/s,\s*([\d.]+) MB/s")


def ours(corpus: Path) -> float:
    argv = [probe_path(), "cpu.text_compression", "--part", "0", "--iterations", "60", "--save-input", str(corpus)]
    out = subprocess.run([*argv, "--format", "json"], capture_output=True, check=True).stdout
    return float(json.loads(out)["benchmarks"][0]["items_per_second"])


def theirs(zstd: str, corpus: Path) -> float:
    out = subprocess.run([zstd, "-b3", "-i2", str(corpus)], capture_output=True, text=True, check=True)
    found = SPEEDS.findall(out.stdout + out.stderr)
    if not found:
        sys.exit(f"cannot read zstd -b's output: {(out.stdout + out.stderr)[-300:]}")
    compress, decompress = (float(x) * 1e6 for x in found[-1])  # zstd's MB is 10^6 bytes
    return 1 / (1 / compress + 1 / decompress)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    zstd = shutil.which("zstd")
    if zstd is None:
        sys.exit("zstd is not installed: apt-get install zstd")
    version = subprocess.run([zstd, "--version"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        ours(corpus)  # writes the corpus, warms up
        pairs = [(ours(corpus), theirs(zstd, corpus)) for _ in range(args.rounds)]
    mine, tool = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
    ratio = statistics.median(p[0] / p[1] for p in pairs)
    print(f"corpus: 1 MiB generated text, zstd level 3; {version}")
    print(f"benchlab cpu.text_compression --part 0: {mine / 1e6:.1f} MB/s (compress + decompress, median of {args.rounds})")
    print(f"zstd -b3 combined:                     {tool / 1e6:.1f} MB/s")
    verdict = "within" if abs(ratio - 1) <= TARGET else "NOT within"
    print(f"ratio benchlab/zstd: {ratio:.3f} (median of paired ratios; {verdict} {TARGET:.0%})")


if __name__ == "__main__":
    main()
