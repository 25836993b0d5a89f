"""The terminal table (rich), printed at the end of `run` and `compare`."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from benchlab.report import cells
from benchlab.report.grid import Grid, special_grids

STYLE = {"better": "bold green", "worse": "bold red", "same": "dim", "unclear": "yellow", "-": "dim"}


def _grid_table(grid: Grid) -> Table:
    table = Table(title=grid.title, title_justify="left")
    for i, name in enumerate(grid.header):
        table.add_column(name, justify="left" if i < 2 or i in grid.verdict_columns else "right")
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
    special = special_grids(report)
    if special:
        return Group(*_grids(*special), *_trailer(report))
    baseline = report["baseline"]
    others = cells.compared_variants(report)
    title = f"{report['experiment']['name']}: {', '.join(others) or 'no variant'} vs {baseline}"
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("workload")
    table.add_column("metric")
    table.add_column(f"{baseline} (median)", justify="right")
    for v in others:
        table.add_column(f"{v} (median)", justify="right")
        table.add_column(f"{v} change [95% CI]", justify="right")
        table.add_column(f"{v} verdict")
    for (workload, metric), by_variant in cells.grouped_rows(report):
        first = next(iter(by_variant.values()))
        cols: list[str | Text] = [workload, metric, cells.quantity(first["baseline_median"], first["unit"])]
        for v in others:
            row = by_variant.get(v)
            if row is None:
                cols += ["", "", ""]
                continue
            cols += [
                cells.quantity(row["median"], row["unit"]),
                cells.change(row["change"], row["change_ci"]),
                Text(cells.verdict(row), style=STYLE.get(row["verdict"], "")),
            ]
        table.add_row(*map(_plain, cols))
    for direction, by_variant in cells.geomean_by_direction(report):
        cols = ["", cells.geomean_label(direction), ""]
        for v in others:
            g = by_variant.get(v)
            cols += (
                ["", cells.change(g["change"], g["change_ci"]), Text(g["verdict"], style=STYLE.get(g["verdict"], ""))]
                if g
                else ["", "", ""]
            )
        table.add_row(*map(_plain, cols), style="italic")
    judged = [r for r in report["rows"] if r["verdict"] != "-"]
    summary = Text(
        f"{len(judged)} comparisons; {report['correction']} correction at alpha={report['alpha']}; "
        f"same = 90% CI within ±{report['margin']:.1%}",
        style="dim",
    )
    return Group(table, summary, *_trailer(report))


def _trailer(report: dict[str, Any]) -> list[Text]:
    lines = [Text(f"failed: {line}", style="red") for line in cells.failure_lines(report)]
    return lines + [Text(f"warning: {line}", style="yellow") for line in report["warnings"]]


def _plain(cell: str | Text) -> Text:
    """Cells are data, never markup: "[n/a]" must print as written."""
    return cell if isinstance(cell, Text) else Text(cell)


def render(report: dict[str, Any]) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=220, color_system=None).print(renderable(report))
    return buffer.getvalue()
