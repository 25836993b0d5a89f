"""Reports: each format renders the report model (`stats.report_model.Report`) in a view
(`views`), and nothing else."""

from __future__ import annotations

from collections.abc import Callable

from benchlab.errors import SpecError
from benchlab.report import benchstat, csv_format, json_format, markdown, table
from benchlab.report.views import VIEWS, View, check_view
from benchlab.stats.report_model import Report

FORMATS: dict[str, Callable[[Report, View], str]] = {
    "table": table.render,
    "md": markdown.render,
    "json": json_format.render,
    "csv": csv_format.render,
    "benchstat": benchstat.render,
}

__all__ = ["FORMATS", "VIEWS", "View", "check_format", "check_view", "render"]


def check_format(fmt: str, view: str = "auto") -> View:
    """The view, once the format and view are known and go together: checked before any analysis,
    so that a run is never made for a report that would then be refused."""
    if fmt not in FORMATS:
        raise SpecError(f"unknown report format '{fmt}' (choose {', '.join(FORMATS)})", where="--format")
    checked = check_view(view)
    if fmt == "json":
        json_format.check(checked)
    if fmt == "benchstat":
        benchstat.check(checked)
    return checked


def render(report: Report, fmt: str, view: str = "auto") -> str:
    """The report in a format and view; a view the format or the report cannot show is refused (exit 2)."""
    return FORMATS[fmt](report, check_format(fmt, view))
