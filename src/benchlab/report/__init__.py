"""Reports: each format renders the report model (`report_model.Report`) in a view
(`views`), and nothing else."""

from __future__ import annotations

from collections.abc import Callable

from benchlab.errors import SpecError
from benchlab.report import benchstat, csv_format, gbench_format, html, hyperfine_json, json_format, markdown, table
from benchlab.report.samples import WHOLE, check_whole
from benchlab.report.views import VIEWS, View, check_view
from benchlab.report_model import Report

FORMATS: dict[str, Callable[[Report, View], str]] = {
    "table": table.render,
    "md": markdown.render,
    "json": json_format.render,
    "csv": csv_format.render,
    "hyperfine": hyperfine_json.render,
    "gbench": gbench_format.render,
    "benchstat": benchstat.render,
    "html": html.render,
}
DRAWS_RUNS = frozenset({"html"})  # formats that plot every run, in whichever view

__all__ = ["FORMATS", "VIEWS", "View", "check_format", "check_view", "needs_runs", "render"]


def check_format(fmt: str, view: str = "auto") -> View:
    """The view, once the format and view are known and go together: checked before any analysis,
    so that a run is never made for a report that would then be refused."""
    if fmt not in FORMATS:
        raise SpecError(f"unknown report format '{fmt}' (choose {', '.join(FORMATS)})", where="--format")
    checked = check_view(view)
    if fmt in WHOLE:
        check_whole(fmt, checked)
    if fmt == "benchstat":
        benchstat.check(checked)
    return checked


def needs_runs(*formats: str) -> bool:
    """Whether any of the formats draws every run, so that the data must be loaded with every run
    whole (`Store.load(every_record=True)`); the others draw from the judged rows alone."""
    return any(fmt in WHOLE or fmt in DRAWS_RUNS for fmt in formats)


def render(report: Report, fmt: str, view: str = "auto") -> str:
    """The report in a format and view; a view the format or the report cannot show is refused (exit 2)."""
    return FORMATS[fmt](report, check_format(fmt, view))
