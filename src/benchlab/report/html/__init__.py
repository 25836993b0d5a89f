"""The HTML report (`--format html`): one self-contained page with plots (see `page`).

Only `render` lives here, and it imports the page (and with it matplotlib) when called, so that
registering the format costs the command line nothing."""

from __future__ import annotations

from benchlab.report.choices import View
from benchlab.report_model import Report


def render(report: Report, view: View = "auto") -> str:
    from benchlab.report.html.page import render as page

    return page(report, view)
