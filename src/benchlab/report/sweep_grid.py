"""The sweep tables: per workload, each judged metric at every sweep point (median, change
against the reference with its interval, verdict), then the line fitted through the changes."""

from __future__ import annotations

from benchlab.report import cells
from benchlab.report.grid import Grid
from benchlab.stats.report_model import Report, Sweep

X_TITLES = {"value": "per unit of the value", "reciprocal": "per unit of 1/value (rate)"}


def _point(sweep: Sweep, variant: str) -> list[str]:
    point = sweep.points.get(variant)
    return [str(point.get(f, "")) if point else "(reference)" if variant == sweep.reference else variant
            for f in sweep.parameters]  # fmt: skip


def grids(report: Report, workloads: set[str] | None = None) -> list[Grid]:
    """Sweep tables of every workload, or only of `workloads`, with their fitted lines."""
    sweep = report.sweep
    assert sweep is not None
    ref = sweep.reference
    by_workload: dict[str, Grid] = {}
    for (workload, _), by_variant in cells.grouped_rows(report):
        first = next(iter(by_variant.values()))
        metric = cells.metric_label(first)
        if first.direction == "none" or (workloads is not None and workload not in workloads):
            continue
        grid = by_workload.get(workload)
        if grid is None:
            grid = Grid(title=f"{workload}: sweep of {', '.join(sweep.parameters)} against '{ref}'",
                        header=["metric", *sweep.parameters, "median", "change [95% CI]", "verdict"],
                        names=1 + len(sweep.parameters))  # fmt: skip
            grid.verdict_columns.append(len(grid.header) - 1)
            by_workload[workload] = grid
        grid.add([metric, *_point(sweep, ref), cells.quantity(first.baseline_median, first.unit), "", ""], emphasis=True)
        for variant in report.variants:
            row = by_variant.get(variant)
            if variant == ref or row is None:
                continue
            grid.add([metric, *_point(sweep, variant), cells.quantity(row.median, row.unit), cells.row_change(row),
                      cells.verdict(row)])  # fmt: skip
    for workload, grid in by_workload.items():
        grid.notes.append(cells.shift_note([r for r in report.rows if r.workload == workload and r.direction != "none"]))
    return [*by_workload.values(), *fit_grid(sweep, workloads)]


def fit_grid(sweep: Sweep, workloads: set[str] | None = None) -> list[Grid]:
    """The fitted lines, one row per metric, or only those of `workloads` ("Overall": the
    overall scores of a suite sweep; every metric's line is in the JSON report)."""
    fits = [f for f in sweep.fits if workloads is None or f.workload in workloads]
    out = []
    if fits:
        fit = Grid(
            title=f"fit: log change = intercept + slope x {sweep.parameters[0]} ({X_TITLES[sweep.fit]}), block effects",
            header=["workload", "metric", "change at 0 [95% CI]", "slope [95% CI]", "runs", "blocks"],
        )
        for f in fits:
            lo, hi = f.slope_ci
            slope = (
                f"{f.slope:+.4g} [{lo:+.4g}, {hi:+.4g}]" if f.slope is not None and lo is not None and hi is not None else "n/a"
            )
            fit.add([f.workload, f.metric, cells.change(f.intercept, f.intercept_ci), slope, str(f.n), str(f.blocks)])
        out.append(fit)
    return out


def footer(report: Report) -> str:
    judged = sum(1 for r in report.rows if r.verdict != "-")
    return (
        f"{judged} comparisons; {report.correction} correction at alpha={report.alpha}; "
        f"same = 90% CI within ±{report.margin:.1%}; slope in log units (a relative change for small values); "
        "unjudged characteristics: --format json or csv"
    )
