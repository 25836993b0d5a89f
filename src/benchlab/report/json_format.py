"""The JSON report: the report model serialised (schema `benchlab.report/2`), raw run values
included. It holds every view's numbers, so a view other than `auto` is refused here."""

from __future__ import annotations

from benchlab.report.samples import check_whole
from benchlab.report.views import View
from benchlab.stats.report_model import Report


def render(report: Report, view: View = "auto") -> str:
    check_whole("json", view)
    return report.to_json()
