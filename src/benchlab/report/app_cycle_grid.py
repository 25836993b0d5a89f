"""The app-cycle tables (the built-in `memory.app_cycle`) in the shape of the page-reclaim
study's: launch time, start types, kills, working-set refaults, kswapd CPU, reclaim efficiency,
direct reclaim, swap and pressure, each a titled group of rows named as the study names them.
Every number is the report's own: the baseline's median, then per variant its median, its
change against the baseline with the interval its verdict reads, and its verdict."""

from __future__ import annotations

from dataclasses import dataclass

from benchlab.report import cells
from benchlab.report.grid import Grid
from benchlab.report_model import MetricRow, Report

BUILTIN = "memory.app_cycle"
BARE = ("count", "ratio")  # units a row's label already says: "hot launches", "hot:cold"
MISSING = (
    "a blank cell: no run of that variant reported the metric (nothing of that class was scanned, so no "
    "efficiency; or its kernel lacks the counter or the tracepoint), which is not a zero"
)
ELSEWHERE = ("allocstall", "trace_lost", "zram_used_max")  # the cycle's metrics shown by --view metrics only
REST = f"every other metric of the cycle (CPU time, faults, {', '.join(ELSEWHERE)}): --view metrics"


@dataclass(frozen=True)
class Line:
    """One row of a section: its label and metric, shown in `unit` where that is another time
    unit than the metric's (the mean launch time, stored in ns, reads in ms beside the others)."""

    label: str
    metric: str
    unit: str | None = None


@dataclass(frozen=True)
class Section:
    """A titled group of rows; after its lines, one line per metric named `prefix` + reason
    (lmkd's kills by reason), only for the reasons with a non-zero median somewhere: lmkd has
    eight, and most cycles see one or two."""

    title: str
    lines: tuple[Line, ...]
    prefix: str = ""
    prefix_label: str = ""


SECTIONS = (
    Section("Launch time", (Line("overall", "real_time", "ms"), Line("hot", "launch_hot"), Line("warm", "launch_warm"),
                            Line("cold", "launch_cold"))),
    Section("Start types", (Line("hot launches", "launches_hot"), Line("warm launches", "launches_warm"),
                            Line("cold launches", "launches_cold"), Line("hot:cold", "hot_cold"),
                            Line("hot:warm", "hot_warm"), Line("warm:cold", "warm_cold"),
                            Line("failed launches", "launch_failures"))),
    Section("Kills", (Line("activity manager", "kills_am"), Line("low-memory killer", "kills_lmk"),
                      Line("kernel OOM", "kills_oom"), Line("total", "kills"),
                      Line("oom_kill, every process", "oom_kill")), "kills_lmk_", "lmkd: "),
    Section("Working-set refaults", (Line("anon", "refault_anon"), Line("file", "refault_file"))),
    Section("kswapd CPU", (Line("CPU time", "kswapd_cpu"),)),
    Section("Reclaim efficiency", (Line("kswapd", "efficiency_kswapd"), Line("direct", "efficiency_direct"),
                                   Line("anon", "efficiency_anon"), Line("file", "efficiency_file"))),
    Section("Direct reclaim", (Line("count", "direct_reclaims"), Line("total stall time", "direct_stall"),
                               Line("< 5 ms", "direct_lt5ms"), Line("5-50 ms", "direct_5_50ms"),
                               Line("50-500 ms", "direct_50_500ms"), Line("> 500 ms", "direct_gt500ms"),
                               Line("share of pages scanned", "direct_share"))),
    Section("Swap and pressure", (Line("pages swapped in", "pswpin"), Line("pages swapped out", "pswpout"),
                                  Line("PSI some", "psi_some"), Line("PSI full", "psi_full"),
                                  Line("zram compression ratio", "zram_ratio"))),
)  # fmt: skip

ByMetric = dict[str, dict[str, MetricRow]]  # metric -> variant -> row, of one workload


def workloads(report: Report) -> list[str]:
    """The experiment's app-cycle workloads that have rows, in report order: rows carry a
    workload's name only, so which built-in it runs is read from the stored spec."""
    cycles = {w.get("name") for w in report.experiment.spec.get("workloads", []) if w.get("builtin") == BUILTIN}
    return list(dict.fromkeys(r.workload for r in report.rows if r.workload in cycles))


def _value(value: float | None, unit: str, line: Line) -> str:
    """A median as the line shows it; blank where it is missing, so that it never reads as 0."""
    if value is None:
        return ""
    if line.unit in cells.SECONDS and unit in cells.SECONDS:
        value, unit = cells.in_unit(value, unit, line.unit), line.unit
    return cells.quantity(value, "" if unit in BARE else unit)


def _lines(section: Section, by_metric: ByMetric) -> list[Line]:
    """The section's lines, then its non-zero reasons in report order."""
    reasons = [
        Line(section.prefix_label + metric.removeprefix(section.prefix).replace("_", " "), metric)
        for metric, by_variant in by_metric.items()
        if section.prefix and metric.startswith(section.prefix) and _non_zero(by_variant)
    ]
    return [*section.lines, *reasons]


def _non_zero(by_variant: dict[str, MetricRow]) -> bool:
    return any(r.baseline_median or r.median for r in by_variant.values())


def _has_value(by_variant: dict[str, MetricRow]) -> bool:
    return any(r.baseline_median is not None or r.median is not None for r in by_variant.values())


def _sections(by_metric: ByMetric) -> list[tuple[str, list[Line]]]:
    """The sections and their lines with a value in some variant, the baseline included: every
    variant's table has the same rows, so that they read side by side."""
    out = []
    for section in SECTIONS:
        lines = [line for line in _lines(section, by_metric) if _has_value(by_metric.get(line.metric, {}))]
        if lines:
            out.append((section.title, lines))
    return out


def _cols(line: Line, by_variant: dict[str, MetricRow], variant: str | None) -> list[str]:
    """The line's cells: the baseline's median, then the variant's median, change and verdict,
    all three blank where the variant has no value."""
    first = next(iter(by_variant.values()))
    cols = [line.label, _value(first.baseline_median, first.unit, line)]
    if variant is None:
        return cols
    row = by_variant.get(variant)
    if row is None or row.median is None:
        return [*cols, "", "", ""]
    return [*cols, _value(row.median, row.unit, line), cells.row_change(row), cells.verdict(row)]


def grid(report: Report, workload: str, variant: str | None) -> Grid:
    """One app-cycle workload's table for one variant against the baseline (None: the baseline's
    own, where it ran alone). A table per variant keeps the study's shape within 100 columns: with
    every variant in one, each would get a sliver of the width and wrap its numbers over lines."""
    baseline = report.baseline
    by_metric: ByMetric = {metric: rows for (w, metric), rows in cells.grouped_rows(report) if w == workload}
    compared = f"{variant} vs {baseline}" if variant else baseline
    header = ["", baseline, *([variant, f"change [{cells.ci_label(report)}]", "verdict"] if variant else [])]
    out = Grid(title=f"{workload}: app cycle, {compared} (medians)", header=header, verdict_columns=[4], names=1)
    shown: list[MetricRow] = []
    for title, lines in _sections(by_metric):
        out.add([title, *[""] * (len(header) - 1)], emphasis=True)
        for line in lines:
            out.add(_cols(line, by_metric[line.metric], variant))
            shown += [by_metric[line.metric][variant]] if variant in by_metric[line.metric] else []
    blank = any(not c for cols, emphasis in zip(out.rows, out.emphasis, strict=True) if not emphasis for c in cols[1:3])
    out.notes += [MISSING if blank else "", cells.shift_note(shown), *cells.change_notes(shown)]
    return out


def grids(report: Report) -> list[Grid]:
    """Per app-cycle workload, a table per variant; under its last, the workload's calibration and
    where its other metrics are."""
    out = []
    variants: list[str | None] = [*cells.compared_variants(report)] or [None]
    for workload in workloads(report):
        tables = [grid(report, workload, v) for v in variants]
        tables[-1].notes += [*cells.calibration_notes(report, {workload}), REST]
        out += tables
    return out
