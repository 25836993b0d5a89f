"""Views: which tables a report is drawn as, chosen when rendering, never stored in the report.

`auto` draws what the experiment is: its CPU scores where it ran suite workloads (its other
workloads after them), its sweep where its variants are sweep points, else the metric table.
`metrics`, `scores` and `sweep` draw one of those by name (a view the report has no data for
is refused), `times` the whole-command times as people quote them (`time make`)."""

from __future__ import annotations

from typing import Literal, get_args

from benchlab.errors import SpecError
from benchlab.report import metric_grid, score_grid, sweep_grid, times_grid
from benchlab.report.grid import Grid
from benchlab.stats.report_model import Report

View = Literal["auto", "metrics", "scores", "sweep", "times"]
VIEWS: tuple[str, ...] = get_args(View)


def check_view(view: str) -> View:
    if view not in VIEWS:
        raise SpecError(f"unknown view '{view}' (choose {', '.join(VIEWS)})", where="--view")
    return view  # type: ignore[return-value]


def resolved(report: Report, view: View) -> View:
    """The view `auto` stands for in this report; a named view the report cannot fill is refused."""
    if view == "auto":
        return "scores" if report.scores else "sweep" if report.sweep else "metrics"
    if view == "scores" and report.scores is None:
        raise SpecError("this experiment ran no CPU-suite workload: it has no scores to show", where="--view")
    if view == "sweep" and report.sweep is None:
        raise SpecError("this experiment's variants are not sweep points: it has no sweep to show", where="--view")
    return view


def report_grids(report: Report, view: View = "auto") -> tuple[list[Grid], str]:
    """The grids and footer of a report in a view."""
    shown = resolved(report, view)
    if shown == "times":
        return [times_grid.grid(report)], times_grid.footer(report)
    if shown == "scores":
        assert report.scores is not None
        sweep = report.sweep
        fits = sweep_grid.fit_grid(sweep, {"Overall"}) if sweep else []
        others = {r.workload for r in report.rows} - set(report.scores.workloads)
        rest: list[Grid] = []
        if others and sweep:
            rest = sweep_grid.grids(report, others)
        elif others:
            rest = [metric_grid.grid(report, others)]
        return [*score_grid.grids(report.scores, sweep), *fits, *rest], score_grid.footer(report)
    if shown == "sweep":
        return sweep_grid.grids(report), sweep_grid.footer(report)
    return [metric_grid.grid(report)], metric_grid.footer(report)
