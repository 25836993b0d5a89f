"""Tables as grids of text cells: each builder (plain metrics, CPU scores, sweeps) returns
grids and a footer, and the terminal and Markdown renderers draw any grid the same way."""

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


def report_grids(report: dict[str, Any]) -> tuple[list[Grid], str]:
    """The grids and footer of a report: score tables for suite workloads (with the rest
    of the experiment's workloads after them), sweep tables, or the plain delta table."""
    from benchlab.report import metric_grid, score_grid, sweep_grid, times_grid

    if report.get("view") == "times":
        return [times_grid.grid(report)], times_grid.footer(report)
    if report.get("scores"):
        fits = sweep_grid.fit_grid(report["sweep"], {"Overall"}) if report.get("sweep") else []
        scored = set(report["scores"].get("workloads", []))
        others = {r["workload"] for r in report["rows"]} - scored
        rest: list[Grid] = []
        if others and report.get("sweep"):
            rest = sweep_grid.grids(report, others)
        elif others:
            rest = [metric_grid.grid(report, others)]
        return [*score_grid.grids(report["scores"], report.get("sweep")), *fits, *rest], score_grid.footer(report)
    if report.get("sweep"):
        return sweep_grid.grids(report), sweep_grid.footer(report)
    return [metric_grid.grid(report)], metric_grid.footer(report)
