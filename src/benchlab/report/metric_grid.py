"""The plain delta table as a grid: per workload and judged or described metric, the
baseline's median, then each variant's median, change against the baseline with its interval
(a judged row's at its family's corrected level: the one its verdict reads), and verdict; then
the geometric-mean rows."""

from __future__ import annotations

from benchlab.report import cells
from benchlab.report.grid import Grid
from benchlab.report_model import Report


def grid(report: Report, workloads: set[str] | None = None) -> Grid:
    """Every workload's rows, or only those of `workloads` (the ones a score table leaves
    out); the geometric means cover the whole experiment, so they come with the whole table."""
    baseline = report.baseline
    others = cells.compared_variants(report)
    title = f"{report.experiment.name}: {', '.join(others) or 'no variant'} vs {baseline}"
    header = ["workload", "metric", f"{baseline} (median)"]
    for v in others:
        header += [f"{v} (median)", f"{v} change [{cells.ci_label(report)}]", f"{v} verdict"]
    out = Grid(title=title, header=header, verdict_columns=[5 + 3 * i for i in range(len(others))], shared=3, group=3)
    shown = []
    for (workload, _), by_variant in cells.grouped_rows(report):
        if workloads is not None and workload not in workloads:
            continue
        first = next(iter(by_variant.values()))
        cols = [workload, cells.metric_label(first), cells.quantity(first.baseline_median, first.unit)]
        for v in others:
            row = by_variant.get(v)
            cols += [cells.quantity(row.median, row.unit), cells.row_change(row), cells.verdict(row)] if row else ["", "", ""]
            shown += [row] if row else []
        out.add(cols)
    out.notes.append(cells.shift_note(shown))
    out.notes += cells.change_notes(shown)
    out.notes += cells.calibration_notes(report, workloads)
    if workloads is None:
        for direction, by_geomean in cells.geomean_by_direction(report):
            cols = ["", cells.geomean_label(direction), ""]
            for v in others:
                g = by_geomean.get(v)
                cols += ["", cells.row_change(g), cells.verdict(g)] if g else ["", "", ""]
            out.add(cols, emphasis=True)
        out.notes += cells.geomean_notes(report)
    return out


def footer(report: Report) -> str:
    judged = [r for r in report.rows if r.verdict != "-"]
    sequential = report.experiment.spec.get("until_decided")
    looks = (
        f"; sequential: looks after blocks {sequential['min_blocks']}-{sequential['max_blocks']}, thresholds calibrated for them"
        if sequential
        else ""
    )
    tests = (
        "unpaired (a diff): two-sample Hodges-Lehmann and Mann-Whitney"
        if report.experiment.sides
        else f"below 6 blocks a paired t-test{looks}"
    )
    return (
        f"{len(judged)} comparisons; {report.correction} correction at alpha={report.alpha}; "
        f"same = 90% CI within ±{report.margin:.1%}; {tests}; {cells.interval_note(report)}; " + cells.family_note()
    )
