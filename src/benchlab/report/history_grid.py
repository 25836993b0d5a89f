"""`benchlab history` as grids: per workload one row per metric and variant with its series drawn
as a line of bars (change points marked `|`), then the change points with the experiments either
side and their size; with `points`, one row per experiment of every series."""

from __future__ import annotations

import datetime

import numpy as np

from benchlab.analysis.history import ChangePoint, History, Point, Series
from benchlab.report import cells
from benchlab.report.grid import Grid

BARS = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 24  # bars at most: longer series are drawn as the medians of as many even slices
MARK = "|"
SHIFT_NOTE = (
    f"'{cells.SHIFT}': the metric has zero or negative values, so its change is the raw shift (after minus before) "
    "over the median before, not a ratio"
)


def grids(history: History, *, points: bool = False) -> tuple[list[Grid], str]:
    """The grids and footer; `points` adds a grid per series with a row per experiment."""
    versioned = several_versions(history)
    by_workload: dict[str, list[Series]] = {}
    for s in history.series:
        by_workload.setdefault(_workload(s, versioned), []).append(s)
    out = []
    for title, series in by_workload.items():
        out.append(_series_grid(title, series))
        if any(s.change_points for s in series):
            out.append(_change_grid(title, series))
    if points:
        out += [_points_grid(s, versioned) for s in history.series]
    return out, footer(history)


def footer(history: History) -> str:
    names = history.experiments
    span = f"{names[0]} ... {names[-1]}" if len(names) > 1 else names[0]
    floor = f", a change of {history.min_change:.1%} or more" if history.min_change else ""
    return (
        f"{len(names)} experiments, oldest first ({span}); a point is an experiment's median; change points by Apache "
        f"Otava (t-test p <= {history.max_pvalue:g} between the medians either side, window {history.window}{floor}); "
        "a change's 95% interval is the Hodges-Lehmann shift over the runs of the segments either side"
    )


def several_versions(history: History) -> set[str]:
    """Workloads that ran in more than one version: their series are named with it."""
    versions: dict[str, set[str]] = {}
    for s in history.series:
        versions.setdefault(s.workload, set()).add(s.version)
    return {w for w, v in versions.items() if len(v) > 1}


def _workload(s: Series, versioned: set[str]) -> str:
    return f"{s.workload} (version {s.version})" if s.workload in versioned else s.workload


def spark(values: list[float], marks: list[int]) -> str:
    """A line of bars from the lowest to the highest value, `|` before the bar that holds each
    marked point (a change point's first point after). Written here: a sparkline is a few
    lines, not worth a dependency."""
    slices = np.array_split(np.arange(len(values)), min(len(values), SPARK_WIDTH))
    shown = [float(np.median([values[i] for i in s])) for s in slices]
    lo, hi = min(shown), max(shown)
    out = []
    for s, v in zip(slices, shown, strict=True):
        if any(s[0] <= m <= s[-1] for m in marks):
            out.append(MARK)
        out.append(BARS[len(BARS) // 2 if hi == lo else round((v - lo) / (hi - lo) * (len(BARS) - 1))])
    return "".join(out)


def median_with_ci(p: Point, unit: str) -> str:
    lo, hi = p.median_ci
    if lo is None or hi is None:
        return f"{cells.quantity(p.median, unit)} [n/a]"
    return f"{cells.quantity(p.median, unit)} [{cells.quantity(lo, '')}, {cells.quantity(hi, '')}]"


def way(s: Series, c: ChangePoint) -> str:
    """better or worse where the metric has a direction, else up or down (from the medians where
    the change has no size: zero before)."""
    shift = c.change if c.change is not None else c.after_median - c.before_median
    if shift == 0:
        return "-"
    up = shift > 0
    if s.direction == "none":
        return "up" if up else "down"
    return "worse" if up == (s.direction == "lower") else "better"


def _series_grid(title: str, series: list[Series]) -> Grid:
    header = ["metric", "variant", "n", "medians, oldest first", "last median [95% CI]", "changes"]
    grid = Grid(title=title, header=header, verdict_columns=[3])  # (the bars read from the left)
    for s in series:
        bars = spark([p.median for p in s.points], [c.index for c in s.change_points])
        grid.add([s.metric, s.variant, str(len(s.points)), bars, median_with_ci(s.points[-1], s.unit), str(len(s.change_points))])
    return grid


def _change_grid(title: str, series: list[Series]) -> Grid:
    """The medians either side are left to the JSON and `--points`: with them a row would not fit 100 columns."""
    header = ["metric", "variant", "change [95% CI]", "", "last before -> first after"]
    grid = Grid(title=f"{title}: change points", header=header, verdict_columns=[3, 4])
    found = [(s, c) for s in series for c in s.change_points]
    for s, c in found:
        change = cells.change(c.change, c.change_ci, log_scale=c.log_scale)
        grid.add([s.metric, s.variant, change, way(s, c), f"{c.before} -> {c.after}"])
    if any(not c.log_scale for _, c in found):
        grid.notes.append(SHIFT_NOTE)
    return grid


def _points_grid(s: Series, versioned: set[str]) -> Grid:
    title = f"{_workload(s, versioned)} / {s.metric} / {s.variant}"
    header = ["experiment", "created", "n", "median [95% CI]", "change point", ""]
    grid = Grid(title=title, header=header, names=1, verdict_columns=[5])
    at = {c.index: c for c in s.change_points}
    for i, p in enumerate(s.points):
        created = datetime.datetime.fromtimestamp(p.created_at).strftime("%Y-%m-%d")
        c = at.get(i)
        change = ["", ""] if c is None else [cells.change(c.change, c.change_ci, log_scale=c.log_scale), way(s, c)]
        grid.add([p.experiment, created, str(p.runs), median_with_ci(p, s.unit), *change])
    return grid
