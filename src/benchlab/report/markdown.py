"""A Markdown delta table, for pull requests and lab notes."""

from __future__ import annotations

from typing import Any

from benchlab.report import cells


def render(report: dict[str, Any]) -> str:
    baseline = report["baseline"]
    others = cells.compared_variants(report)
    header = ["workload", "metric", f"{baseline} (median)"]
    for v in others:
        header += [f"{v} (median)", f"{v} change [95% CI]", f"{v} verdict"]
    lines = [f"## {report['experiment']['name']}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
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
        lines.append("| " + " | ".join(cols) + " |")
    for direction, by_variant in cells.geomean_by_direction(report):
        cols = ["", f"*{cells.geomean_label(direction)}*", ""]
        for v in others:
            g = by_variant.get(v)
            cols += ["", cells.change(g["change"], g["change_ci"]), g["verdict"]] if g else ["", "", ""]
        lines.append("| " + " | ".join(cols) + " |")
    lines += ["", f"{report['correction']} correction at alpha={report['alpha']}; same = 90% CI within ±{report['margin']:.1%}"]
    lines += [f"- failed: {line}" for line in cells.failure_lines(report)]
    lines += [f"- warning: {line}" for line in report["warnings"]]
    return "\n".join(lines) + "\n"
