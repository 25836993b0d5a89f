"""Whole-command times as people quote them (`time make -jN`): per workload its
real, user and sys time (and the workload's own time, where it reports one),
best of N and median for every variant or host, and how many times faster or
slower each is than the baseline ("1.14x faster"), with the 95% interval of
that ratio, which is the judged change turned round."""

from __future__ import annotations

from collections.abc import Sequence

from benchlab.report import cells
from benchlab.report.grid import Grid
from benchlab.stats.report_model import MetricRow, Report

TIMES = ("wall", "user", "sys", "real_time")


def ratio(change: float | None, ci: Sequence[float | None], *, log_scale: bool = True) -> str:
    """A change of the variant's time against the baseline's, said as a speed ratio (marked
    `shift` where the change is a raw shift over the baseline's median, see `cells.shift_note`)."""
    if change is None:
        return "n/a"
    if not log_scale:
        return f"{ratio(change, ci)} {cells.SHIFT}"
    factor = 1 / (1 + change)  # baseline time / variant time
    faster = factor >= 1
    word = "faster" if faster else "slower"
    shown = factor if faster else 1 / factor
    if ci[0] is None or ci[1] is None:
        return f"{shown:.2f}x {word}"
    lo, hi = sorted((1 / (1 + ci[0]), 1 / (1 + ci[1])))
    bounds = (lo, hi) if faster else (1 / hi, 1 / lo)
    return f"{shown:.2f}x {word} [{bounds[0]:.2f}, {bounds[1]:.2f}]"


def rows(report: Report) -> list[tuple[tuple[str, str], dict[str, MetricRow]]]:
    """The time rows, by workload and then in TIMES order."""
    return sorted(
        ((key, by_variant) for key, by_variant in cells.grouped_rows(report) if key[1] in TIMES),
        key=lambda item: (item[0][0], TIMES.index(item[0][1])),
    )


def grid(report: Report) -> Grid:
    baseline = report.baseline
    others = cells.compared_variants(report)
    header = ["workload", "time", f"{baseline} best", f"{baseline} median"]
    for v in others:
        header += [f"{v} best", f"{v} median", f"{v} vs {baseline} [95% CI]"]
    out = Grid(title=f"{report.experiment.name}: times, best of N and median", header=header)
    shown = []
    for (workload, metric), by_variant in rows(report):
        first = next(iter(by_variant.values()))
        unit = first.unit
        cols = [workload, metric, cells.quantity(first.baseline_best, unit), cells.quantity(first.baseline_median, unit)]
        for v in others:
            row = by_variant.get(v)
            cols += (
                [
                    cells.quantity(row.best, unit),
                    cells.quantity(row.median, unit),
                    ratio(row.change, row.change_ci, log_scale=row.log_scale),
                ]
                if row
                else ["", "", ""]
            )
            shown += [row] if row else []
        out.add(cols)
    out.notes.append(cells.shift_note(shown))
    return out


def footer(report: Report) -> str:
    runs = max((r.n for r in report.rows), default=0)
    return f"best and median of up to {runs} runs per column; the ratio is the baseline's time over the column's"
