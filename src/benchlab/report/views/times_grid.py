"""Whole-command times as people quote them (`time make -jN`): per workload its
real, user and sys time (and the workload's own time, where it reports one),
best of N and median for every variant or host, and how many times faster or
slower each is than the baseline ("1.14x faster"), with the interval of
that ratio (the one its verdict reads), which is the judged change turned round."""

from __future__ import annotations

import math
from collections.abc import Sequence

from benchlab.report.views import cells
from benchlab.report.views.grid import Grid
from benchlab.report_model import MetricRow, Report

TIMES = ("wall", "user", "sys", "real_time")
OWN_TIME = "real_time"  # the workload's own time: the whole run's (a build), or one operation's (a benchmark)
PER_OPERATION = 10  # an own time under a tenth of the workload's wall time is one operation's


def speedup(change: float) -> float:
    """The baseline's time over the variant's ("1.14x faster"). A change at -100% (a variant taking
    no time, or an interval's bound whose log ratio underflowed to it) is an infinite speed-up,
    never a division by zero."""
    return math.inf if change <= -1 else 1 / (1 + change)


def ratio(change: float | None, ci: Sequence[float | None], *, log_scale: bool = True, missing: str = "n/a") -> str:
    """A change of the variant's time against the baseline's, said as a speed ratio (marked
    `shift` where the change is a raw shift over the baseline's median, see `cells.shift_note`),
    with `missing` where the interval is (`cells.no_interval`: why there is none)."""
    if change is None:
        return "n/a"
    if not log_scale:
        if min([change, *(c for c in ci if c is not None)]) <= -1:  # a shift down to zero time is no speed ratio
            return cells.change(change, ci, log_scale=False, missing=missing)
        return f"{ratio(change, ci, missing=missing)} {cells.SHIFT}"
    factor = speedup(change)  # baseline time / variant time
    faster = factor >= 1
    word = "faster" if faster else "slower"
    shown = factor if faster else 1 / factor
    if ci[0] is None or ci[1] is None:
        return f"{shown:.2f}x {word} [{missing}]"
    lo, hi = sorted((speedup(ci[0]), speedup(ci[1])))
    bounds = (lo, hi) if faster else (1 / hi, math.inf if lo == 0 else 1 / lo)
    return f"{shown:.2f}x {word} [{bounds[0]:.2f}, {bounds[1]:.2f}]"


Rows = list[tuple[tuple[str, str], dict[str, MetricRow]]]


def rows(report: Report) -> Rows:
    """The time rows, by workload and then in TIMES order."""
    return sorted(
        ((key, by_variant) for key, by_variant in cells.grouped_rows(report) if key[1] in TIMES),
        key=lambda item: (item[0][0], TIMES.index(item[0][1])),
    )


def _seconds(by_variant: dict[str, MetricRow]) -> list[float]:
    values = [v for r in by_variant.values() for v in (r.best, r.median, r.baseline_best, r.baseline_median)]
    unit = next(iter(by_variant.values())).unit
    return [v * cells.SECONDS[unit] for v in values if v is not None]


def units(found: Rows) -> dict[tuple[str, str], str]:
    """The unit each row's times read in: one for the whole table, the largest in which its
    longest time is at least 1 (a 1.13 s build's real_time and its wall both in s), except a
    workload's own time far shorter than its wall time, which is one operation's (alloc.churn's
    187 ns), another kind of quantity, read in its own unit. A row of another unit keeps it."""
    spans = {key: _seconds(by_variant) for key, by_variant in found if next(iter(by_variant.values())).unit in cells.SECONDS}
    walls = {workload: max(span) for (workload, metric), span in spans.items() if metric == "wall" and span}

    def whole(key: tuple[str, str]) -> bool:
        wall = walls.get(key[0])
        return key[1] != OWN_TIME or wall is None or max(spans[key], default=0.0) * PER_OPERATION >= wall

    table = cells.time_unit(s for key, span in spans.items() if whole(key) for s in span)
    return {key: table if whole(key) else cells.time_unit(span) for key, span in spans.items()}


def grid(report: Report) -> Grid:
    baseline = report.baseline
    others = cells.compared_variants(report)
    header = ["workload", "time", f"{baseline} best", f"{baseline} median"]
    for v in others:
        header += [f"{v} best", f"{v} median", f"{v} vs {baseline} [{cells.ci_label(report)}]"]
    out = Grid(title=f"{report.experiment.name}: times, best of N and median", header=header, shared=4, group=3)
    found = rows(report)
    shown_in = units(found)
    shown = []
    for (workload, metric), by_variant in found:
        first = next(iter(by_variant.values()))
        unit = shown_in.get((workload, metric), first.unit)

        def time(value: float | None, unit: str = unit, stored: str = first.unit) -> str:
            return cells.quantity(cells.in_unit(value, stored, unit) if unit != stored else value, unit)

        cols = [workload, metric, time(first.baseline_best), time(first.baseline_median)]
        for v in others:
            row = by_variant.get(v)
            cols += (
                [
                    time(row.best),
                    time(row.median),
                    cells.row_change(row, ratio),
                ]
                if row
                else ["", "", ""]
            )
            shown += [row] if row else []
        out.add(cols)
    out.notes.append(cells.shift_note(shown))
    out.notes += cells.change_notes(shown)
    return out


def footer(report: Report) -> str:
    runs = max((r.n for r in report.rows), default=0)
    return (
        f"best and median of up to {runs} runs per column; the ratio is the baseline's time over the column's; "
        + cells.interval_note(report)
    )
