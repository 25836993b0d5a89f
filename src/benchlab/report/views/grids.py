"""Views: which tables a report is drawn as, chosen when rendering, never stored in the report;
the grids each view gives are the same for every format that draws them.

`auto` draws what the experiment is: its CPU scores where it ran suite workloads, the
page-reclaim study's tables where it ran the app cycle (`memory.app_cycle`), each with its other
workloads after them, its sweep where its variants are sweep points, else the metric table.
`metrics`, `scores`, `app-cycle` and `sweep` draw one of those by name (a view the report has no
data for is refused), `times` the whole-command times as people quote them (`time make`)."""

from __future__ import annotations

from benchlab.errors import SpecError
from benchlab.report.choices import View
from benchlab.report.views import app_cycle_grid, cells, metric_grid, profile_grid, score_grid, sweep_grid, times_grid
from benchlab.report.views.grid import Grid
from benchlab.report_model import Report


def resolved(report: Report, view: View) -> View:
    """The view `auto` stands for in this report; a named view the report cannot fill is refused."""
    if view == "auto":
        cycles = app_cycle_grid.workloads(report)
        return "scores" if report.scores else "app-cycle" if cycles else "sweep" if report.sweep else "metrics"
    if view == "scores" and report.scores is None:
        raise SpecError("this experiment ran no CPU-suite workload: it has no scores to show", where="--view")
    if view == "app-cycle" and not app_cycle_grid.workloads(report):
        raise SpecError(
            f"this experiment ran no app cycle ({app_cycle_grid.BUILTIN}): it has no app-cycle tables to show", where="--view"
        )
    if view == "sweep" and report.sweep is None:
        raise SpecError("this experiment's variants are not sweep points: it has no sweep to show", where="--view")
    return view


def report_grids(report: Report, view: View = "auto") -> tuple[list[Grid], str]:
    """The grids and footer of a report in a view, and after them where the time went (an
    experiment with profiled runs)."""
    grids, footer = _view_grids(report, view)
    where, why = profile_grid.report_grids(report)
    return [*grids, *where], " ".join(part for part in (footer, why) if part)


def _view_grids(report: Report, view: View) -> tuple[list[Grid], str]:
    shown = resolved(report, view)
    if shown == "times":
        return [times_grid.grid(report)], times_grid.footer(report)
    sweep = report.sweep
    if shown == "scores":
        assert report.scores is not None
        fits = sweep_grid.fit_grid(sweep, {"Overall"}) if sweep else []
        rest = _other_workloads(report, set(report.scores.workloads))
        return [*score_grid.grids(report.scores, sweep, cells.ci_label(report)), *fits, *rest], score_grid.footer(report)
    if shown == "app-cycle":
        cycles = set(app_cycle_grid.workloads(report))
        fits = sweep_grid.fit_grid(sweep, cycles) if sweep else []
        rest = _other_workloads(report, cycles)
        return [*app_cycle_grid.grids(report), *fits, *rest], metric_grid.footer(report)
    if shown == "sweep":
        return sweep_grid.grids(report), sweep_grid.footer(report)
    return [metric_grid.grid(report)], metric_grid.footer(report)


def _other_workloads(report: Report, drawn: set[str]) -> list[Grid]:
    """The workloads a view's own tables leave out, drawn after them as the sweep or the metric
    table would draw them."""
    others = {r.workload for r in report.rows} - drawn
    if others and report.sweep:
        return sweep_grid.grids(report, others)
    return [metric_grid.grid(report, others)] if others else []
