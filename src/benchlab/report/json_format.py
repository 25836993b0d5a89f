"""The JSON report: the report model serialised (schema `benchlab.report/2`), raw run values
included. It holds every view's numbers, so a view other than `auto` is refused here."""

from __future__ import annotations

from benchlab.errors import SpecError
from benchlab.report.views import View
from benchlab.stats.report_model import Report


def check(view: View) -> None:
    if view != "auto":
        raise SpecError(f"the JSON report has no '{view}' view: it holds every view's numbers (leave the view out)")


def render(report: Report, view: View = "auto") -> str:
    check(view)
    return report.to_json()
