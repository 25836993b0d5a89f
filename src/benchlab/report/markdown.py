"""A Markdown delta table, for pull requests and lab notes."""

from __future__ import annotations

from benchlab.report import cells, safe
from benchlab.report.choices import View
from benchlab.report.grid import Grid
from benchlab.report.views import report_grids
from benchlab.report_model import Report


def _line(text: str) -> str:
    """A heading, note or list item: one Markdown line whatever the data holds (see `safe.markdown`)."""
    return safe.markdown(text, limit=safe.LINE_MAX)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def _grids(report: Report, grids: list[Grid], footer: str) -> list[str]:
    lines = [f"## {_line(report.experiment.name)}"]
    for grid in grids:
        rows = [
            [f"**{safe.markdown(c)}**" if emphasis and c else safe.markdown(c) for c in cols]
            for cols, emphasis in zip(grid.rows, grid.emphasis, strict=True)
        ]
        lines += ["", f"### {_line(grid.title)}", "", *_table([safe.markdown(h) for h in grid.header], rows)]
        lines += [f"\n{_line(note)}" for note in grid.notes if note]
    return [*lines, "", _line(footer)]


def render(report: Report, view: View = "auto") -> str:
    lines = _grids(report, *report_grids(report, view))
    lines += [f"- failed: {_line(line)}" for line in cells.failure_lines(report)]
    lines += [f"- warning: {_line(line)}" for line in report.warnings]
    return "\n".join(lines) + "\n"
