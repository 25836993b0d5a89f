"""The sweep tables: per workload, each judged metric at every sweep point (median, change
against the reference with its interval, verdict), then the line fitted through the changes."""

from __future__ import annotations

from benchlab.report import cells
from benchlab.report.grid import Grid
from benchlab.report_model import Report, Sweep, SweepFit

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
                        header=["metric", *sweep.parameters, "median", f"change [{cells.ci_label(report)}]", "verdict"],
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


def _slope(value: float | None, ci: tuple[float | None, float | None]) -> str:
    lo, hi = ci
    return f"{value:+.4g} [{lo:+.4g}, {hi:+.4g}]" if value is not None and lo is not None and hi is not None else "n/a"


def _lack_of_fit(f: SweepFit) -> str:
    """Whether the line describes the points: its lack-of-fit p, `does not fit` below 0.05."""
    if f.lack_of_fit_p is None:
        return "untested (2 points)"
    return f"p={f.lack_of_fit_p:.2g}" + ("" if f.line_fits else " does not fit")


def _read_at_0(f: SweepFit) -> str:
    if f.change_at_0_from is None and f.line_fits:  # a fit stored before the test: its line, untested
        return f"{cells.change(f.intercept, f.intercept_ci)} line"
    if f.change_at_0 is None:
        return "n/a: no model fits"
    return f"{cells.change(f.change_at_0, f.change_at_0_ci)} {f.change_at_0_from}"


def _other_model(f: SweepFit) -> str | None:
    """A note on the model read where the line does not fit."""
    chosen = next((m for m in f.models if m.model == f.model), None)
    if chosen is None or chosen.model == "line":
        return None
    at_0 = cells.change(chosen.intercept, chosen.intercept_ci)
    if chosen.model == "piecewise" and chosen.knot is not None and chosen.slope is not None:
        after = chosen.slope + (chosen.slope_after or 0)
        shape = f"bends at x = {chosen.knot:.4g} (slope {chosen.slope:+.4g}, then {after:+.4g}), change at 0 {at_0}"
    elif chosen.model == "additive":
        shape = f"change at 0 {at_0}, then {_slope(chosen.slope, chosen.slope_ci)} per unit of x (the change itself, not its log)"
    else:
        shape = f"slope {_slope(chosen.slope, chosen.slope_ci)} per unit of ln(value), change at value 1 {at_0}"
    return f"{f.workload} {f.metric}: the {chosen.model} model fits (lack-of-fit p={chosen.lack_of_fit_p:.2g}): {shape}"


def fit_grid(sweep: Sweep, workloads: set[str] | None = None) -> list[Grid]:
    """The fitted lines, one row per metric, or only those of `workloads` ("Overall": the
    overall scores of a suite sweep; every model of every metric is in the JSON report): the
    line's change at 0 and slope, whether it describes the points (its lack-of-fit test), the
    variant measured at 0 where there is one, and the change at 0 to read."""
    fits = [f for f in sweep.fits if workloads is None or f.workload in workloads]
    out = []
    if fits:
        measured = next((f.measured_at_0.variant for f in fits if f.measured_at_0), None)
        fit = Grid(
            title=f"fit: log change = intercept + slope x {sweep.parameters[0]} ({X_TITLES[sweep.fit]}), block effects",
            header=["workload", "metric", "line: change at 0 [95% CI]", "slope [95% CI]", "lack of fit",
                    *([f"measured at 0 ({measured}) [95% CI]"] if measured else []), "read at 0 [95% CI]"],
            group=1,
        )  # fmt: skip
        for f in fits:
            point = f.measured_at_0
            shown = [cells.change(point.change, point.change_ci) if point else "n/a"] if measured else []
            fit.add([f.workload, f.metric, cells.change(f.intercept, f.intercept_ci), _slope(f.slope, f.slope_ci),
                     _lack_of_fit(f), *shown, _read_at_0(f)])  # fmt: skip
        fit.notes.append(
            "lack of fit: F test of the line against a mean per sweep point (block effects kept); below 0.05 the line "
            "does not describe the points, and its change at 0 is not read: 'read at 0' is then the variant measured "
            "at 0, else the intercept of the additive or piecewise model read; the measured one is read too where the line's "
            "change at 0 disagrees with it (a z test at 5%) or cannot be compared with it; every model: --format json"
        )
        sizes = sorted({(f.n, f.blocks) for f in fits})
        fit.notes.append("fitted through " + "; ".join(f"{n} runs in {b} blocks" for n, b in sizes))
        fit.notes += [note for f in fits if (note := _other_model(f))]
        out.append(fit)
    return out


def footer(report: Report) -> str:
    judged = sum(1 for r in report.rows if r.verdict != "-")
    return (
        f"{judged} comparisons; {report.correction} correction at alpha={report.alpha}; "
        f"same = 90% CI within ±{report.margin:.1%}; slope in log units (a relative change for small values); "
        "unjudged characteristics: --format json or csv"
    )
