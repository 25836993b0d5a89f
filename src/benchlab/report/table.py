"""The terminal table (rich), printed at the end of `run` and `compare`."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from benchlab.report import cells, safe
from benchlab.report.grid import Grid
from benchlab.report.views import View, report_grids
from benchlab.stats.report_model import Report

STYLE = {"better": "bold green", "worse": "bold red", "same": "dim", "unclear": "yellow", "-": "dim"}


def _line(text: str, style: str = "") -> Text:
    """A title, note or footer: rich Text (never markup), control characters escaped."""
    return Text(safe.text(text, limit=safe.LINE_MAX), style=style)


def _grid_table(grid: Grid) -> Table:
    table = Table(title=_line(grid.title), title_justify="left")
    header = [safe.text(name) for name in grid.header]
    rows = [[safe.text(c) for c in cols] for cols in grid.rows]
    for i, name in enumerate(header):
        is_name = i < grid.names
        widest = max([len(name), *(len(row[i]) for row in rows)]) if is_name else None
        left = is_name or i in grid.verdict_columns
        table.add_column(Text(name), justify="left" if left else "right", min_width=widest, no_wrap=is_name)
    for cols, emphasis in zip(rows, grid.emphasis, strict=True):
        styled = [Text(c, style=STYLE.get(c, "")) if i in grid.verdict_columns else Text(c) for i, c in enumerate(cols)]
        table.add_row(*styled, style="bold" if emphasis else "")
    return table


def _grids(grids: list[Grid], footer: str) -> list[Any]:
    parts: list[Any] = []
    for grid in grids:
        parts.append(_grid_table(grid))
        parts += [_line(note, "dim") for note in grid.notes if note]
    parts.append(_line(footer, "dim"))
    return parts


def renderable(report: Report, view: View = "auto") -> Group:
    return Group(*_grids(*report_grids(report, view)), *_trailer(report))


def _trailer(report: Report) -> list[Text]:
    lines = [_line(f"failed: {line}", "red") for line in cells.failure_lines(report)]
    return lines + [_line(f"warning: {line}", "yellow") for line in report.warnings]


def render(report: Report, view: View = "auto") -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=220, color_system=None).print(renderable(report, view))
    return buffer.getvalue()


def group(grids: list[Grid], footer: str, warnings: Sequence[str] = ()) -> Group:
    """Grids of a command other than `report` (`benchlab history`), drawn as a report's are."""
    return Group(*_grids(grids, footer), *(_line(f"warning: {w}", "yellow") for w in warnings))
