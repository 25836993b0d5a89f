"""The terminal table (rich), printed at the end of `run` and `compare`: laid out for the
terminal's width (`layout`), or for 100 columns where the output is a pipe or a file."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from benchlab.report import cells, layout, safe
from benchlab.report.choices import View
from benchlab.report.grid import Grid
from benchlab.report.views import report_grids
from benchlab.report_model import Report

STYLE = {"better": "bold green", "worse": "bold red", "same": "dim", "unclear": "yellow", "-": "dim"}


def _line(text: str, style: str = "") -> Text:
    """A title, note or footer: rich Text (never markup), control characters escaped."""
    return Text(safe.text(text, limit=safe.LINE_MAX), style=style)


def _escaped(grid: Grid) -> Grid:
    """The grid as it is shown, control characters escaped, so that it is measured as it is drawn."""
    return dataclasses.replace(
        grid,
        title=safe.text(grid.title, limit=safe.LINE_MAX),
        header=[safe.text(name) for name in grid.header],
        rows=[[safe.text(c) for c in cols] for cols in grid.rows],
    )


def draw(block: layout.Block) -> Table:
    """One block as a rich table with the block's widths, every cell folding rather than cropped
    (at those widths only names and headers need to)."""
    grid = block.grid
    table = Table(box=box.MINIMAL_HEAVY_HEAD, show_edge=False, pad_edge=False)
    for i, (name, width) in enumerate(zip(grid.header, block.widths, strict=True)):
        left = i < grid.names or i in grid.verdict_columns
        table.add_column(Text(name), justify="left" if left else "right", width=width, overflow="fold")
    for n, (cols, emphasis) in enumerate(zip(grid.rows, grid.emphasis, strict=True)):
        styled = [Text(c, style=STYLE.get(c, "")) if i in grid.verdict_columns else Text(c) for i, c in enumerate(cols)]
        table.add_row(*styled, style="bold" if emphasis else "", end_section=n in block.rules)
    return table


def _grids(grids: list[Grid], footer: str, width: int) -> list[Any]:
    parts: list[Any] = []
    for grid in grids:
        for block in layout.blocks(_escaped(grid), width):
            parts += [Text(block.grid.title), draw(block)]
        parts += [_line(note, "dim") for note in grid.notes if note]
    parts.append(_line(footer, "dim"))
    return parts


def renderable(report: Report, view: View = "auto", width: int = layout.WIDTH) -> Group:
    """The report laid out for a terminal of `width` columns (the console printing it should be as wide)."""
    return Group(*_grids(*report_grids(report, view), width), *_trailer(report))


def _trailer(report: Report) -> list[Text]:
    lines = [_line(f"failed: {line}", "red") for line in cells.failure_lines(report)]
    return lines + [_line(f"warning: {line}", "yellow") for line in report.warnings]


def render(report: Report, view: View = "auto") -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=layout.WIDTH, color_system=None, emoji=False).print(renderable(report, view))
    return buffer.getvalue()


def group(grids: list[Grid], footer: str, warnings: Sequence[str] = (), width: int = layout.WIDTH) -> Group:
    """Grids of a command other than `report` (`benchlab history`), laid out as a report's are."""
    return Group(*_grids(grids, footer, width), *(_line(f"warning: {w}", "yellow") for w in warnings))
