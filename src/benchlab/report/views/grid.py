"""Tables as grids of text cells: each builder (plain metrics, CPU scores, sweeps, times)
returns grids and a footer (see `views`), and the terminal and Markdown renderers draw any
grid the same way."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Grid:
    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    emphasis: list[bool] = field(default_factory=list)  # summary rows (sections, overall)
    verdict_columns: list[int] = field(default_factory=list)
    names: int = 2  # leading columns that name a row (workload, metric): in a narrow terminal they fold, numbers never
    notes: list[str] = field(default_factory=list)
    # How a terminal too narrow for the whole grid splits it (report/formats/layout.py): the `shared`
    # leading columns (0: the name columns) come in every block, and after them each `group`
    # columns (a variant's median, change and verdict) stay together; 0: the rest never splits.
    shared: int = 0
    group: int = 0

    def add(self, cols: list[str], *, emphasis: bool = False) -> None:
        self.rows.append(cols)
        self.emphasis.append(emphasis)
