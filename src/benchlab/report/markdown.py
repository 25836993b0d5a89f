"""A Markdown delta table, for pull requests and lab notes."""

from __future__ import annotations

from typing import Any

from benchlab.report import cells
from benchlab.report.grid import Grid, report_grids


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def _grids(report: dict[str, Any], grids: list[Grid], footer: str) -> list[str]:
    lines = [f"## {report['experiment']['name']}"]
    for grid in grids:
        rows = [
            [f"**{c}**" if emphasis and c else c for c in cols] for cols, emphasis in zip(grid.rows, grid.emphasis, strict=True)
        ]
        lines += ["", f"### {grid.title}", "", *_table(grid.header, rows)]
        lines += [f"\n{note}" for note in grid.notes if note]
    return [*lines, "", footer]


def render(report: dict[str, Any]) -> str:
    lines = _grids(report, *report_grids(report))
    lines += [f"- failed: {line}" for line in cells.failure_lines(report)]
    lines += [f"- warning: {line}" for line in report["warnings"]]
    return "\n".join(lines) + "\n"
