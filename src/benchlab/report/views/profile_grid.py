"""Where the time went (`benchlab explain`, and after the tables of every report of an experiment
with profiled runs): per workload and variant its functions ranked by the share of the
workload's change each explains, with the judged change (as a fraction of the workload's whole
time on the baseline) and its verdict; then its libraries and kernel vs user, shown, not judged."""

from __future__ import annotations

from collections import defaultdict

from benchlab.report.views import cells
from benchlab.report.views.grid import Grid
from benchlab.report_model import CounterRow, FunctionRow, Profiles, Report

HEADER = ["function", "library", "baseline", "variant", "change of the whole [CI]", "share", "verdict"]
COUNTER_HEADER = ["counter", "says", "baseline", "variant", "change [95% CI]"]
FUNCTIONS_SHOWN = 12  # per workload and variant in a report; `explain` shows every judged one


def _time(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit != "s":
        return cells.quantity(value, unit)
    shown = cells.time_unit([value])
    return cells.quantity(cells.in_unit(value, "s", shown), shown)


def _share(row: FunctionRow) -> str:
    return "n/a" if row.share is None else f"{row.share * 100:.0f}%"


def _cells(row: FunctionRow) -> list[str]:
    name = {
        "space": f"{row.name} space",
        "total": "(all samples)",
        "inclusive": f"{row.name} +callees",
        "off-cpu total": "(all waits)",
    }.get(row.level, row.name)
    library = row.library or "" if row.level in ("function", "inclusive", "off-cpu") else ""
    return [
        name, library, _time(row.baseline_self_median, row.unit),
        _time(row.self_median, row.unit), cells.change(row.change, row.change_ci, log_scale=True), _share(row), row.verdict,
    ]  # fmt: skip


def grids(
    profiles: Profiles, *, workload: str | None = None, variant: str | None = None, limit: int | None = FUNCTIONS_SHOWN
) -> list[Grid]:
    """A grid per workload and variant (of those asked for), its judged functions first (the
    first `limit`), then libraries, kernel and user, and the whole."""
    by_pair: dict[tuple[str, str], list[FunctionRow]] = defaultdict(list)
    for row in profiles.rows:
        if (workload is None or row.workload == workload) and (variant is None or row.variant == variant):
            by_pair[(row.workload, row.variant)].append(row)
    out = []
    for (w, v), rows in by_pair.items():
        on_cpu = [r for r in rows if not r.level.startswith("off-cpu")]
        out.append(_grid(f"where the time went: {w}, {v} against the baseline ({profiles.event})", on_cpu, "function", limit))
        waits = [r for r in rows if r.level.startswith("off-cpu")]
        if waits:
            out.append(_grid(f"where it waited: {w}, {v} against the baseline (off the CPU)", waits, "off-cpu", limit))
        counted = [c for c in profiles.counters if (c.workload, c.variant) == (w, v)]
        if counted:
            out.append(_counter_grid(w, v, counted))
    return out


def _grid(title: str, rows: list[FunctionRow], judged: str, limit: int | None) -> Grid:
    """The judged rows (of level `judged`; the first `limit`), then the rest, shown."""
    grid = Grid(title=title, header=HEADER, verdict_columns=[6])
    functions = [r for r in rows if r.level == judged]
    shown = functions if limit is None else functions[:limit]
    for row in shown:
        grid.add(_cells(row))
    if len(shown) < len(functions):
        grid.notes.append(f"{len(functions) - len(shown)} more judged functions: `benchlab explain` lists them")
    for row in rows:
        if row.level != judged:
            grid.add(_cells(row), emphasis=row.level.endswith("total"))
    return grid


def _counter_grid(workload: str, variant: str, rows: list[CounterRow]) -> Grid:
    """What perf stat counted: cycles split into instructions (more work) and cycles per
    instruction (slower work), then the other events; shown with intervals, not judged."""
    grid = Grid(title=f"counted: {workload}, {variant} against the baseline", header=COUNTER_HEADER)
    for row in rows:
        unit = "s" if row.unit == "s" else ""  # a count or a ratio: its bare number
        grid.add([
            row.counter, row.meaning or "", _time(row.baseline_median, unit), _time(row.median, unit),
            cells.change(row.change, row.change_ci, log_scale=True),
        ])  # fmt: skip
    return grid


def footer(profiles: Profiles) -> str:
    """What profiling cost, and what the profiles could not say."""
    costs = [f"{c.workload}/{c.variant} {cells.change(c.change, c.change_ci)}" for c in profiles.cost if c.change is not None]
    lines = [
        f"{profiles.runs} profiled runs ({profiles.failed} without a profile), never samples of the metrics; a function's "
        "change is its time's shift as a fraction of the workload's whole time on the baseline, judged per workload "
        "in a family of its own (under A/A at most alpha of experiments name any function: measured in "
        "docs/statistics.md, Profiles); share: of the whole's change, where its 95% interval excludes 0; libraries, "
        "kernel/user and the whole are shown, not judged (-)",
    ]
    if costs:
        lines.append("profiled runs' wall time against the timed runs' [95% CI]: " + "; ".join(costs))
    if profiles.counters:
        lines.append(
            "counted: by perf stat over each profiled run, shown with 95% intervals, not judged; cycles change as "
            "instructions (more work) times cycles per instruction (slower work)"
        )
    return ". ".join([*lines, *profiles.notes]) + "."


def report_grids(report: Report) -> tuple[list[Grid], str]:
    """The report's profile grids and their footer; none without profiled runs."""
    if report.profiles is None:
        return [], ""
    return grids(report.profiles), footer(report.profiles)
