"""Tables as grids of text cells, for the reports that are not one row per metric (CPU
scores, sweeps): each builder returns grids and a footer, and the terminal and Markdown
renderers draw any grid the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Grid:
    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    emphasis: list[bool] = field(default_factory=list)  # summary rows (sections, overall)
    verdict_columns: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, cols: list[str], *, emphasis: bool = False) -> None:
        self.rows.append(cols)
        self.emphasis.append(emphasis)


def special_grids(report: dict[str, Any]) -> tuple[list[Grid], str] | None:
    """The grids and footer of a score or sweep report; None for the plain metric table."""
    from benchlab.report import score_grid, sweep_grid

    if report.get("scores"):
        fits = sweep_grid.fit_grid(report["sweep"], only="Overall") if report.get("sweep") else []
        return [*score_grid.grids(report["scores"], report.get("sweep")), *fits], score_grid.footer(report)
    if report.get("sweep"):
        return sweep_grid.grids(report), sweep_grid.footer(report)
    return None
