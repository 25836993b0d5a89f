"""The JSON report: the report model serialised (schema `benchlab.report/2`), raw run values
included. It holds every view's numbers, so a view other than `auto` is refused (`report.check_format`)."""

from __future__ import annotations

from benchlab.report.choices import View
from benchlab.report_model import Report


def render(report: Report, view: View = "auto") -> str:
    return report.to_json()
