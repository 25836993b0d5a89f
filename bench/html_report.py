"""How long the HTML report of 100,000 stored runs takes, and how big it is (targets: under 5 s,
under 5 MB; issue 18).

Builds the synthetic experiment of bench/report_speed.py (5 command workloads x 4 variants x
5,000 blocks, the eight wait4 metrics per run) straight into a SQLite file, then times what
`benchlab report NAME --format html` does: loading every run, judging, drawing the page (the
first drawing pays matplotlib's import, as the command does). Prints each step, the page's size,
its plots and how many runs it embeds, and the CPU time beside the wall time (the columnar
reader is a process of its own: its time is in the wall time only).

With --histograms every run also keeps two latency histograms in its details, as an IPC latency
run does (its two halves, about 60 buckets each, varied per run), so the page draws and adds
them up: the cost of the IPC workloads' histograms at 100,000 runs.

    uv run python bench/html_report.py [--blocks 5000] [--histograms] [--out page.html]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sqlalchemy import update

sys.path.insert(0, str(Path(__file__).parent))
from report_speed import DETAILS, build  # noqa: E402  (the same synthetic store as the table's speed check)

from benchlab.analysis.analyze import analyze  # noqa: E402
from benchlab.cli.results import load_for_report  # noqa: E402
from benchlab.report import render  # noqa: E402
from benchlab.store import Store  # noqa: E402
from benchlab.store import schema as t  # noqa: E402

TARGET_S = 5.0
TARGET_BYTES = 5_000_000
SHAPES = 64  # distinct histogram documents the runs cycle through


def with_histograms(store: Store) -> None:
    """Every run's details with two halves' histograms: a body around 3 us and a sparse tail."""
    rng = np.random.default_rng(2)
    texts = []
    for _ in range(SHAPES):
        of = {}
        for half, first in (("x/other", 88), ("x/fifo", 92)):
            counts = rng.poisson(np.r_[np.geomspace(4000, 10, 20), np.full(40, 0.3)]).tolist()
            counts[-1] += 1
            of[half] = {"first": first, "counts": counts}
        texts.append(json.dumps({**json.loads(DETAILS), "histograms": {"per_octave": 8, "unit": "ns", "of": of}}))
    with store.engine.begin() as conn:
        ids = [row[0] for row in conn.execute(t.run_detail.select().with_only_columns(t.run_detail.c.run_id))]
        for k, text in enumerate(texts):
            conn.execute(update(t.run_detail).where(t.run_detail.c.run_id.in_(ids[k::SHAPES])).values(details=text))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=5000)
    parser.add_argument("--histograms", action="store_true", help="every run keeps two latency histograms")
    parser.add_argument("--out", type=Path, help="also write the page here, to look at")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "big.db"))
        build(store, args.blocks)
        if args.histograms:
            with_histograms(store)
        start, cpu = time.perf_counter(), time.process_time()
        data = load_for_report(store, store.require_experiment("big"), every_record=True)  # as `benchlab report` loads
        loaded = time.perf_counter()
        report = analyze(data).report()
        judged = time.perf_counter()
        page = render(report, "html")
        done, cpu = time.perf_counter(), time.process_time() - cpu
    if args.out:
        args.out.write_text(page)
    size = len(page.encode())
    total = done - start
    print(f"load {loaded - start:.2f} s, analyse {judged - loaded:.2f} s, render {done - judged:.2f} s")
    script = page.split('id="benchlab-data">', 1)[1].split("</script>", 1)[0]
    note = json.loads(script)["thinning"]["note"]
    print(f"page {size / 1e6:.2f} MB, {page.count('<svg')} plots; {note}")
    print(f"total {total:.2f} s ({cpu:.2f} s of CPU in this process) for {len(report.runs):,} runs; "
          f"ratio to the {TARGET_S:g} s target: {total / TARGET_S:.2f}; size ratio to {TARGET_BYTES / 1e6:g} MB: "
          f"{size / TARGET_BYTES:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
