"""Whole-command times as people quote them (`time make -jN`): per workload its
real, user and sys time (and the workload's own time, where it reports one),
best of N and median for every variant or host, and how many times faster or
slower each is than the baseline ("1.14x faster"), with the 95% interval of
that ratio, which is the judged change turned round."""

from __future__ import annotations

from typing import Any

from benchlab.report import cells
from benchlab.report.grid import Grid

TIMES = ("wall", "user", "sys", "real_time")


def ratio(change: float | None, ci: list[float | None]) -> str:
    """A change of the variant's time against the baseline's, said as a speed ratio."""
    if change is None:
        return "n/a"
    factor = 1 / (1 + change)  # baseline time / variant time
    faster = factor >= 1
    word = "faster" if faster else "slower"
    shown = factor if faster else 1 / factor
    if ci[0] is None or ci[1] is None:
        return f"{shown:.2f}x {word}"
    lo, hi = sorted((1 / (1 + ci[0]), 1 / (1 + ci[1])))
    bounds = (lo, hi) if faster else (1 / hi, 1 / lo)
    return f"{shown:.2f}x {word} [{bounds[0]:.2f}, {bounds[1]:.2f}]"


def grid(report: dict[str, Any]) -> Grid:
    baseline = report["baseline"]
    others = cells.compared_variants(report)
    header = ["workload", "time", f"{baseline} best", f"{baseline} median"]
    for v in others:
        header += [f"{v} best", f"{v} median", f"{v} vs {baseline} [95% CI]"]
    out = Grid(title=f"{report['experiment']['name']}: times, best of N and median", header=header)
    ordered = sorted(
        ((key, rows) for key, rows in cells.grouped_rows(report) if key[1] in TIMES),
        key=lambda item: (item[0][0], TIMES.index(item[0][1])),
    )
    for (workload, metric), by_variant in ordered:
        first = next(iter(by_variant.values()))
        unit = first["unit"]
        cols = [workload, metric, cells.quantity(first["baseline_best"], unit), cells.quantity(first["baseline_median"], unit)]
        for v in others:
            row = by_variant.get(v)
            cols += (
                [cells.quantity(row["best"], unit), cells.quantity(row["median"], unit), ratio(row["change"], row["change_ci"])]
                if row
                else ["", "", ""]
            )
        out.add(cols)
    return out


def footer(report: dict[str, Any]) -> str:
    runs = max((r["n"] for r in report["rows"]), default=0)
    return f"best and median of up to {runs} runs per column; the ratio is the baseline's time over the column's"
