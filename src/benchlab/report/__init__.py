"""Reports: each format renders the report model (`report_model.Report`) in a view
(`views`), and nothing else. This module only names them (`choices`): a renderer loads when a
report is drawn, so a refused `--format` costs no import of numpy or matplotlib."""

from __future__ import annotations

from benchlab.report.choices import FORMATS, VIEWS, View, check_format, check_view, needs_runs

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from benchlab.report_model import Report

__all__ = ["FORMATS", "VIEWS", "View", "check_format", "check_view", "needs_runs", "render"]


def render(report: Report, fmt: str, view: str = "auto") -> str:
    """The report in a format and view; a view the format or the report cannot show is refused (exit 2)."""
    from benchlab.report.renderers import RENDERERS

    return RENDERERS[fmt](report, check_format(fmt, view))
