"""Which plots a report gets, and their data: the report's rows and runs turned into the
arguments of `plots`, one function per kind of plot, each returning HTML (a figure with its
caption) or nothing where the report has nothing to draw.

Plotted per workload are its outcome metrics (the primary family; for a CPU-suite workload the
rate its score is made of): CPU time, memory, faults and switches explain an outcome or
describe the run, and are in the tables and the embedded data (a workload has a dozen of them).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

import numpy as np

from benchlab.report import cells
from benchlab.report.html import plots
from benchlab.report.html.data import WorkloadRuns
from benchlab.report.html.tables import esc
from benchlab.report_model import MetricRow, Report
from benchlab.stats.families import PRIMARY, SCORED
from benchlab.workloads.probe import HISTOGRAM_BUCKETS
from benchlab.workloads.probe import HISTOGRAM_PER_OCTAVE as PER_OCTAVE

SCORED_FROM = "items_per_second"  # the rate a suite workload's score is computed from (analysis/scores.py)
QUANTILE = re.compile(r"^(?P<prefix>.*?)(?P<q>p\d+(?:_\d+)?|best|worst)$")
MINUTE, HOUR = 60.0, 3600.0
Interval = tuple[float | None, float | None]


def figure(svg: str, caption: str, *, half: bool = False) -> str:
    """A plot with its caption; `half`: a small plot, two side by side at the page's width."""
    kind = ' class="half"' if half else ""
    return f"<figure{kind}>{svg}<figcaption>{esc(caption)}</figcaption></figure>"


def _title(workload: str, metric: str) -> str:
    """A metric's title: with its workload, unless its name starts with it (`ipc.pipe.latency/other:p50`)."""
    return metric if metric.startswith(workload) else f"{workload}: {metric}"


def plotted(row: MetricRow) -> bool:
    return row.family == PRIMARY or (row.family == SCORED and row.metric == SCORED_FROM)


def _order(runs: WorkloadRuns) -> tuple[np.ndarray, str]:
    """Where each run falls in the order: time since the experiment's first run, in a unit that
    suits the span, or the block where a run has no start time (imported from an old bundle)."""
    if not len(runs.started) or np.isnan(runs.started).any():
        return runs.block.astype(float), "block"
    span = float(runs.started.max())
    scale, unit = (HOUR, "h") if span > 2 * HOUR else (MINUTE, "min") if span > 2 * MINUTE else (1.0, "s")
    return runs.started / scale, f"time since the first run ({unit})"


def _median(rows: dict[str, MetricRow], variant: str, baseline: str) -> tuple[float | None, Interval]:
    """The variant's median and 95% interval as its row says them; the baseline's as every row says them."""
    row = rows.get(variant)
    if row is not None:
        return row.median, row.median_ci
    first = next(iter(rows.values()))
    return (first.baseline_median, first.baseline_median_ci) if variant == baseline else (None, (None, None))


def _time_unit(unit: str, values: np.ndarray) -> tuple[float, str]:
    """A time metric in the unit its median reads best in (2.4 s, not 2,400,000,000 ns): the
    factor to multiply its values by, and the unit; other metrics as they are."""
    if unit not in cells.SECONDS or not len(values):
        return 1.0, unit
    shown = cells.time_unit([float(np.median(values)) * cells.SECONDS[unit]])
    return cells.SECONDS[unit] / cells.SECONDS[shown], shown


def _scaled(x: float | None, factor: float) -> float | None:
    return None if x is None else x * factor


def metrics(report: Report, canvas: plots.Canvas, runs: WorkloadRuns) -> list[str]:
    """Per outcome metric of the workload, its distribution per variant and its run order."""
    order, order_unit = _order(runs)
    out = []
    for (workload, metric), rows in cells.grouped_rows(report):
        first = next(iter(rows.values()))
        values = runs.values.get(metric)
        if workload != runs.workload or not plotted(first) or values is None:
            continue
        factor, unit = _time_unit(first.unit, values[~np.isnan(values)])
        series = []
        for i, variant in enumerate(report.variants):
            keep = (runs.variant == i) & ~np.isnan(values)
            median, (lo, hi) = _median(rows, variant, report.baseline)
            ci = (_scaled(lo, factor), _scaled(hi, factor))
            series.append(plots.Values(variant, plots.colour(i), values[keep] * factor, order[keep], _scaled(median, factor), ci))
        title = _title(workload, metric)
        svg = plots.metric_figure(canvas, title, unit, series, order_unit)
        n = sum(len(s.values) for s in series)
        out.append(figure(svg, f"{title}: {n:,} runs ({first.direction} is better)"))
    return out


def _histogram_median(counts: np.ndarray) -> float:
    """The median of the samples counted (in ns), placed inside its bucket as if the bucket's
    samples were spread evenly over its log width."""
    cumulative = np.cumsum(counts)
    half = cumulative[-1] / 2
    k = int(np.searchsorted(cumulative, half))
    before = cumulative[k - 1] if k else 0.0
    return float(2.0 ** ((k + (half - before) / counts[k]) / PER_OCTAVE))


def histograms(report: Report, canvas: plots.Canvas, runs: WorkloadRuns) -> list[str]:
    """Per benchmark entry of an IPC workload (each half of a latency run), every timed
    transaction of each variant's runs: the runs' histograms added up (they share the probe's
    grid), as shares of the variant's samples so that variants of different run counts compare."""
    metrics = list(runs.values)
    place = {name: next((i for i, m in enumerate(metrics) if m.startswith(name)), len(metrics)) for name in runs.histograms}
    out = []
    for name in sorted(runs.histograms, key=place.__getitem__):  # in the order of their metrics: other before fifo
        summed = runs.histograms[name]
        totals = summed.counts.sum(axis=1)
        present = np.flatnonzero(totals)
        if not len(present):
            continue
        used = np.flatnonzero(summed.counts[present].sum(axis=0))
        low, high = max(0, int(used[0]) - 1), min(HISTOGRAM_BUCKETS, int(used[-1]) + 2)  # an empty bucket each side
        medians = np.array([_histogram_median(summed.counts[v]) for v in present])
        factor, unit = _time_unit("ns", medians)
        edges = 2.0 ** (np.arange(low, high + 1) / PER_OCTAVE) * factor
        series = [plots.Shares(report.variants[v], plots.colour(v), summed.counts[v, low:high] / totals[v], m * factor)
                  for v, m in zip(present, medians, strict=True)]  # fmt: skip
        title = _title(runs.workload, f"{name} latency histogram")
        caption = (
            f"{title}: per variant every timed transaction of its runs ({int(totals.sum()):,} transactions of "
            f"{int(summed.runs.sum()):,} runs), as its share of the variant's samples in buckets "
            f"{2 ** (1 / PER_OCTAVE) - 1:.0%} wide ({PER_OCTAVE} to a doubling; both axes logarithmic, empty "
            "buckets at the bottom); dashed: each variant's median"
        )
        if runs.without_histograms:
            caption += f"; {runs.without_histograms:,} runs stored without histograms are left out"
        out.append(figure(plots.histogram_figure(canvas, title, edges, series, unit), caption, half=True))
    return out


def percentiles(report: Report, canvas: plots.Canvas, runs: WorkloadRuns) -> list[str]:
    """Latency percentiles, where runs were stored without histograms (older probes, other
    benchmarks): each run's percentiles (best, p50, p90, p99, p99.9, worst), not every
    transaction, so the distribution drawn is of those, per run."""
    if runs.histograms and not runs.without_histograms:
        return []
    groups: dict[str, list[str]] = defaultdict(list)
    for metric in runs.values:
        match = QUANTILE.match(metric)
        if match:
            groups[match["prefix"]].append(metric)
    out = []
    for prefix, names in groups.items():
        if len(names) < 2:
            continue
        names.sort(key=_quantile_place)
        stored = next((r.unit for r in report.rows if r.workload == runs.workload and r.metric == names[0]), "")
        matrix = np.column_stack([runs.values[m] for m in names])
        factor, unit = _time_unit(stored, matrix[~np.isnan(matrix)])
        series = [(v, plots.colour(i), matrix[runs.variant == i] * factor) for i, v in enumerate(report.variants)]
        title = _title(runs.workload, f"{prefix.rstrip(':_/') or 'latency'} percentiles")
        labels = [QUANTILE.match(m)["q"].replace("_", ".") for m in names]  # type: ignore[index]
        svg = plots.percentile_figure(canvas, title, labels, series, unit)
        caption = (
            f"{title}: per variant the median run's percentiles, the band from the 10th to the 90th percentile of "
            "runs (each run keeps its own percentiles, not every transaction)"
        )
        out.append(figure(svg, caption, half=True))
    return out


def _quantile_place(metric: str) -> float:
    q = QUANTILE.match(metric)["q"]  # type: ignore[index]
    return plots.QUANTILE_PLACE.get(q, 0.0) if q in plots.QUANTILE_PLACE else float(q[1:].replace("_", "."))


def sweep(report: Report, canvas: plots.Canvas) -> list[str]:
    """Per plotted metric, its change along the sweep's parameter (of two, the first one with
    numbers, the other giving a curve per value), with the fitted line."""
    swept = report.sweep
    if swept is None:
        return []
    numeric = {name: _numbers([p.get(name) for p in swept.points.values()]) for name in swept.parameters}
    parameter, *second = sorted(swept.parameters, key=lambda name: not numeric[name])
    ticks = None if numeric[parameter] else [str(p.get(parameter)) for p in swept.points.values()]
    ticks = list(dict.fromkeys(ticks)) if ticks else None

    def point(variant: str, row: MetricRow) -> plots.Point:
        value = swept.points[variant].get(parameter)
        x = float(value) if ticks is None else float(ticks.index(str(value)))  # type: ignore[arg-type]
        curve = f"{second[0]} = {swept.points[variant].get(second[0])}" if second else ""
        return plots.Point(x, row.change, row.change_ci, row.verdict, curve)

    fits = {(f.workload, f.metric): f for f in swept.fits}
    out = []
    for (workload, metric), rows in cells.grouped_rows(report):
        first = next(iter(rows.values()))
        points = [point(v, r) for v, r in rows.items() if v in swept.points]
        if not plotted(first) or not points:
            continue
        fit = fits.get((workload, metric))
        line = None
        drawable = fit and fit.intercept is not None and fit.slope is not None and ticks is None and not second
        if fit and drawable and fit.line_fits and fit.intercept is not None and fit.slope is not None:
            line = (math.log1p(fit.intercept), fit.slope, fit.x == "reciprocal")  # a line that misses the points is not drawn
        title = f"{_title(workload, metric)} along {parameter}"
        svg = plots.sweep_figure(canvas, title, parameter, points, ticks, line)
        caption = f"{title}: change against '{swept.reference}' with its interval at its family's corrected level"
        if fit and line:
            caption += f"; fitted line: change at 0 {cells.change(fit.intercept, fit.intercept_ci)}"
        elif fit and drawable:
            caption += (
                f"; no line drawn: the line does not describe the points (lack-of-fit p = {fit.lack_of_fit_p:.2g}, see warnings)"
            )
        if fit and fit.change_at_0_from not in (None, "line"):
            caption += f"; change at 0 read: {cells.change(fit.change_at_0, fit.change_at_0_ci)} {fit.change_at_0_from}"
        out.append(figure(svg, caption, half=True))
    return out


def scores(report: Report, canvas: plots.Canvas) -> list[str]:
    """Per mode (single-core, multi-core), the overall, section and workload scores of each variant."""
    suite = report.scores
    if suite is None:
        return []
    out = []
    for mode in suite.modes:
        rows = [r for r in suite.rows if r.mode == mode and r.level != "suite"]
        categories = list(dict.fromkeys(_category(r.level, r.name) for r in sorted(rows, key=_level_place)))
        if not categories:
            continue
        bars = []
        for i, variant in enumerate(suite.variants):
            mine = {_category(r.level, r.name): r for r in rows if r.variant == variant}
            got = [mine.get(c) for c in categories]
            bars.append(plots.Bars(variant, plots.colour(report.variants.index(variant) if variant in report.variants else i),
                                   [r.score if r else None for r in got],
                                   [r.score_ci if r else (None, None) for r in got]))  # fmt: skip
        title = f"{suite.suite} suite: {mode} scores"
        out.append(figure(plots.score_figure(canvas, title, categories, bars),
                          f"{title} (baseline machine = 1000), with the 95% interval where there is one"))  # fmt: skip
    return out


def _numbers(values: list[object]) -> bool:
    return all(isinstance(x, int | float) and not isinstance(x, bool) for x in values)


LEVELS = {"overall": 0, "section": 1, "workload": 2}


def _level_place(row: object) -> int:
    return LEVELS.get(getattr(row, "level", ""), 3)


def _category(level: str, name: str) -> str:
    return f"{cells.section_title(name)} (section)" if level == "section" else name
