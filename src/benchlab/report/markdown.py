"""A Markdown delta table, for pull requests and lab notes."""

from __future__ import annotations

from typing import Any

from benchlab.report import cells
from benchlab.report.grid import Grid, special_grids


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
    special = special_grids(report)
    lines = _grids(report, *special) if special else _metrics(report)
    lines += [f"- failed: {line}" for line in cells.failure_lines(report)]
    lines += [f"- warning: {line}" for line in report["warnings"]]
    return "\n".join(lines) + "\n"


def _metrics(report: dict[str, Any]) -> list[str]:
    baseline = report["baseline"]
    others = cells.compared_variants(report)
    header = ["workload", "metric", f"{baseline} (median)"]
    for v in others:
        header += [f"{v} (median)", f"{v} change [95% CI]", f"{v} verdict"]
    body = []
    for (workload, metric), by_variant in cells.grouped_rows(report):
        first = next(iter(by_variant.values()))
        cols = [workload, metric, cells.quantity(first["baseline_median"], first["unit"])]
        for v in others:
            row = by_variant.get(v)
            cols += (
                [cells.quantity(row["median"], row["unit"]), cells.change(row["change"], row["change_ci"]), cells.verdict(row)]
                if row
                else ["", "", ""]
            )
        body.append(cols)
    for direction, by_variant in cells.geomean_by_direction(report):
        cols = ["", f"*{cells.geomean_label(direction)}*", ""]
        for v in others:
            g = by_variant.get(v)
            cols += ["", cells.change(g["change"], g["change_ci"]), g["verdict"]] if g else ["", "", ""]
        body.append(cols)
    lines = [f"## {report['experiment']['name']}", "", *_table(header, body)]
    return [
        *lines,
        "",
        f"{report['correction']} correction at alpha={report['alpha']}; same = 90% CI within ±{report['margin']:.1%}",
    ]
