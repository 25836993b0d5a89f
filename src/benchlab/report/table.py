"""The terminal table (rich), printed at the end of `run` and `compare`."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from benchlab.report import cells
from benchlab.report.grid import Grid, report_grids

STYLE = {"better": "bold green", "worse": "bold red", "same": "dim", "unclear": "yellow", "-": "dim"}


def _grid_table(grid: Grid) -> Table:
    table = Table(title=grid.title, title_justify="left")
    for i, name in enumerate(grid.header):
        # the names (workload, metric) are never cut: the numbers wrap instead
        is_name = i < 2
        widest = max([len(name), *(len(row[i]) for row in grid.rows)]) if is_name else None
        left = is_name or i in grid.verdict_columns
        table.add_column(name, justify="left" if left else "right", min_width=widest, no_wrap=is_name)
    for cols, emphasis in zip(grid.rows, grid.emphasis, strict=True):
        styled = [Text(c, style=STYLE.get(c, "")) if i in grid.verdict_columns else Text(c) for i, c in enumerate(cols)]
        table.add_row(*styled, style="bold" if emphasis else "")
    return table


def _grids(grids: list[Grid], footer: str) -> list[Any]:
    parts: list[Any] = []
    for grid in grids:
        parts.append(_grid_table(grid))
        parts += [Text(note, style="dim") for note in grid.notes if note]
    parts.append(Text(footer, style="dim"))
    return parts


def renderable(report: dict[str, Any]) -> Group:
    return Group(*_grids(*report_grids(report)), *_trailer(report))


def _trailer(report: dict[str, Any]) -> list[Text]:
    lines = [Text(f"failed: {line}", style="red") for line in cells.failure_lines(report)]
    return lines + [Text(f"warning: {line}", style="yellow") for line in report["warnings"]]


def render(report: dict[str, Any]) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=220, color_system=None).print(renderable(report))
    return buffer.getvalue()
