"""The page's plots: matplotlib figures written as SVG text to be inlined in the page.

matplotlib is imported here only, and this module only when an HTML page is drawn (its import
costs half a second that no other command should pay). Text stays text (`svg.fonttype` none:
no glyph paths, the reader's sans-serif font), never parsed as mathtext (`$` in a name), and
every label passes through `safe.text`, so no name can break the SVG: matplotlib's SVG writer
escapes `<`, `&` and quotes itself. What makes an SVG a fragment of the page and not a
document is cut: the XML prolog and DOCTYPE, the namespace declarations (HTML puts inline SVG
in its namespace by itself), the `*` style rule (it would apply to the whole page) and the
automatic element ids, which every figure repeats; the ids that are referenced (markers, clip
paths) are hashes salted per figure, so they are unique in the page.

Large experiments are summarised, so a page of 100,000 runs stays small and quick: above
STRIP_MAX runs of a variant the strip of points becomes a violin, and above ORDER_MAX the
run-order plot draws per time bin the median and the range (min to max) instead of each run.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullLocator

from benchlab.report import safe
from benchlab.report.formats.html.tables import esc

STRIP_MAX = 300  # runs of one variant drawn as points in a strip plot; above, a violin
ORDER_MAX = 400  # runs of one variant drawn as points in the run-order plot; above, binned
BINS = 100  # time bins of a binned run-order plot
LABEL_MAX = 40  # characters of a name on an axis or in a legend (the page's headings and captions carry it whole)
TITLE_MAX = 90  # characters of a plot's title
LOG_SPAN = 30.0  # a positive metric whose largest value is this many times its smallest gets a log axis
WIDTH = 11.5  # inches at 72 points: about 1,100 px, the page's width at 1,280
PALETTE = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
]  # fmt: skip
CUT = (
    re.compile(r"\A.*?(?=<svg)", re.S),
    re.compile(r' xmlns(?::xlink)?="[^"]*"'),
    re.compile(r"<style[^>]*>.*?</style>", re.S),
    re.compile(r' id="[^"]*_\d+"'),
)


def colour(index: int) -> str:
    """A variant's colour, the same in every plot of the page (the palette repeats after ten)."""
    return PALETTE[index % len(PALETTE)]


def label(text: str, limit: int = LABEL_MAX) -> str:
    """A name as a plot shows it: escaped (`safe.text`), long ones cut with an ellipsis."""
    shown = safe.text(text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "\u2026"


SI = {3: "k", 6: "M", 9: "G", 12: "T", 15: "P"}


def _number(value: float, _position: object = None) -> str:
    """A tick label in few characters: plain digits below 10,000, else with an SI prefix
    (1.28G), so that it fits beside the axis (matplotlib's own log labels are mathtext, off here)."""
    if abs(value) < 1e4:
        return f"{value:.4g}"
    exponent = min(15, 3 * int(math.log10(abs(value)) // 3))
    return f"{value / 10**exponent:.4g}{SI[exponent]}"


@contextmanager
def style() -> Iterator[None]:
    """The plots' settings, for the time a page is drawn (never matplotlib's global state)."""
    with matplotlib.rc_context(
        {
            "svg.fonttype": "none",
            "text.parse_math": False,
            "font.family": "sans-serif",
            "font.sans-serif": ["DejaVu Sans"],
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "legend.fontsize": 8,
            "legend.frameon": False,
        }
    ):
        yield


class Canvas:
    """Figures to SVG fragments, each with its own id salt (see the module's docstring)."""

    def __init__(self) -> None:
        self.drawn = 0

    def svg(self, fig: Figure, title: str) -> str:
        self.drawn += 1
        FigureCanvasSVG(fig)
        buffer = io.StringIO()
        with matplotlib.rc_context({"svg.hashsalt": f"benchlab-plot-{self.drawn}"}):
            fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
        text = buffer.getvalue()
        for pattern in CUT:
            text = pattern.sub("", text)
        # a name for screen readers and for tests: the figure's title, escaped for an attribute
        return text.replace("<svg ", f'<svg role="img" aria-label="{esc(title)}" class="plot" ', 1)


@dataclass
class Values:
    """One variant's runs of one metric: values, where each ran in the order (seconds since the
    experiment's first run, or the block), and the median with its 95% interval."""

    name: str
    colour: str
    values: np.ndarray
    order: np.ndarray
    median: float | None
    ci: tuple[float | None, float | None]


def _log_worthy(values: Sequence[np.ndarray]) -> bool:
    present = [v for v in values if len(v)]
    if not present:
        return False
    low = min(float(v.min()) for v in present)
    high = max(float(v.max()) for v in present)
    return low > 0 and high / low > LOG_SPAN


def _axis(ax: Axes, which: str, log: bool) -> None:
    """Few ticks on the x or y axis, no minor ones (matplotlib builds every tick as artists, and a
    log axis's minor ticks made most of a figure's drawing time), labelled in plain digits."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    if log:
        if which == "x":
            ax.set_xscale("log")
        else:
            ax.set_yscale("log")
        axis.set_major_locator(LogLocator(numticks=6))
        axis.set_minor_locator(NullLocator())
    else:
        axis.set_major_locator(MaxNLocator(5))
    axis.set_major_formatter(FuncFormatter(_number))


def _title(ax: Axes, text: str, *, bold: bool = False) -> None:
    """A title as plain text above the axes (`set_title` measures every tick label to place itself)."""
    ax.text(0, 1.03, text, transform=ax.transAxes, fontsize=10 if bold else 9, fontweight="bold" if bold else "normal")


def _strip(ax: Axes, series: list[Values], rng: np.random.Generator) -> None:
    for i, s in enumerate(series):
        if len(s.values) > STRIP_MAX:
            parts = ax.violinplot([s.values], positions=[i], widths=0.8, showextrema=False, points=80)
            for body in parts["bodies"]:  # type: ignore[attr-defined]
                body.set_facecolor(s.colour)
                body.set_alpha(0.45)
        elif len(s.values):
            jitter = rng.uniform(-0.22, 0.22, len(s.values))
            ax.scatter(i + jitter, s.values, s=14, color=s.colour, alpha=0.65, linewidths=0)
        if s.median is not None:
            lo, hi = s.ci
            ax.hlines(s.median, i - 0.32, i + 0.32, color="black", linewidth=1.6, zorder=3)
            if lo is not None and hi is not None:
                ax.vlines(i, lo, hi, color="black", linewidth=1.2, zorder=3)
                ax.hlines([lo, hi], i - 0.12, i + 0.12, color="black", linewidth=1.0, zorder=3)
    names = [label(s.name) for s in series]
    if _slanted(names):  # ending under their variant: no collision
        ax.set_xticks(range(len(series)), names, rotation=30, ha="right", rotation_mode="anchor")
    else:
        ax.set_xticks(range(len(series)), names)
    ax.set_xlim(-0.6, len(series) - 0.4)
    violins = any(len(s.values) > STRIP_MAX for s in series)
    _title(ax, "every run" + (" (violins)" if violins else "") + ", median and 95% interval")


def _binned(ax: Axes, s: Values, edges: np.ndarray) -> None:
    """Per bin of the order: the median as a line, the range as a band (an outlier is a spike)."""
    order = np.argsort(s.order, kind="stable")
    x, v = s.order[order], s.values[order]
    cuts = np.searchsorted(x, edges)
    mids, med, low, high = [], [], [], []
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        if b > a:
            chunk = v[a:b]
            mids.append(float(x[a:b].mean()))
            med.append(float(np.median(chunk)))
            low.append(float(chunk.min()))
            high.append(float(chunk.max()))
    ax.fill_between(mids, low, high, color=s.colour, alpha=0.18, linewidth=0)
    ax.plot(mids, med, color=s.colour, linewidth=1.2, label=label(s.name))


def _run_order(ax: Axes, series: list[Values], unit: str) -> None:
    present = [s for s in series if len(s.order)]
    binned = any(len(s.order) > ORDER_MAX for s in present)
    if present and binned:
        low = min(float(s.order.min()) for s in present)
        high = max(float(s.order.max()) for s in present)
        edges = np.linspace(low, high if high > low else low + 1, BINS + 1)
        edges[-1] = math.inf
        for s in present:
            _binned(ax, s, edges)
    else:
        for s in present:
            ax.plot(s.order, s.values, "o-", color=s.colour, markersize=3, linewidth=0.6, alpha=0.75, label=label(s.name))
    ax.set_xlabel(unit)
    how = f"median and range in each of {BINS} slices of time" if binned else "each run in the order it ran"
    ax.xaxis.set_major_locator(MaxNLocator(8))
    _title(ax, f"run order: {how}")
    if len(present) <= 12:
        ax.legend(loc="best", ncols=1 + len(present) // 5)


def _slanted(names: list[str]) -> bool:
    """Variant names too many or too long to sit level under their places on an axis."""
    return len(names) > 4 or sum(map(len, names)) > 8 * len(names)


def metric_figure(canvas: Canvas, title: str, y_label: str, series: list[Values], order_unit: str) -> str:
    """The distribution of a metric per variant beside its values in run order, sharing the y axis;
    the figure grows below its axes by what slanted names need (half their length at 30 degrees)."""
    names = [label(s.name) for s in series]
    under = 0.45 + (0.033 * max(map(len, names), default=0) if _slanted(names) else 0.15)  # inches
    height = 2.6 + under
    fig = Figure(figsize=(WIDTH, height))
    fig.subplots_adjust(left=0.08, right=0.99, bottom=under / height, top=1 - 0.45 / height, wspace=0.08)
    strip, order = fig.subplots(1, 2, sharey=True, width_ratios=[2, 3])
    _axis(strip, "y", _log_worthy([s.values for s in series]))
    _strip(strip, series, np.random.default_rng(0))
    _run_order(order, series, order_unit)
    strip.set_ylabel(label(y_label))
    fig.text(0.01, 0.96, label(title, TITLE_MAX), fontsize=10, fontweight="bold", va="top")
    return canvas.svg(fig, title)


@dataclass
class Point:
    """A sweep point: its x (the swept value, or its place where values are not numbers), its
    change against the reference with the 95% interval (fractions), its verdict, and, in a
    sweep of two parameters, the second one's value it belongs to (a curve of its own)."""

    x: float
    change: float | None
    ci: tuple[float | None, float | None]
    verdict: str
    curve: str = ""


VERDICT_COLOURS = {"better": "#2ca02c", "worse": "#d62728"}


def sweep_figure(canvas: Canvas, title: str, parameter: str, points: list[Point], ticks: list[str] | None,
                 line: tuple[float, float, bool] | None) -> str:  # fmt: skip
    """Change against the reference along a sweep, with intervals and the fitted line
    `exp(intercept + slope x) - 1` (x the value, or 1/value for a reciprocal fit, 0 for 0)."""
    fig = Figure(figsize=(WIDTH * 0.5, 3.2))
    fig.subplots_adjust(left=0.15, right=0.98, bottom=0.17, top=0.86)
    ax = fig.subplots()
    xs = np.array([p.x for p in points], dtype=float)
    log_x = ticks is None and len(xs) > 1 and xs.min() > 0 and xs.max() / xs.min() > LOG_SPAN
    curves = list(dict.fromkeys(p.curve for p in points))
    for i, curve in enumerate(curves):  # one parameter: one curve, its points coloured by verdict
        mine = sorted((p for p in points if p.curve == curve and p.change is not None), key=lambda p: p.x)
        if len(curves) > 1:
            ax.plot([p.x for p in mine], [100 * p.change for p in mine], "-", color=colour(i), linewidth=0.8,  # type: ignore[operator]
                    label=label(curve))  # fmt: skip
        for p in mine:
            lo, hi = p.ci
            err = None if lo is None or hi is None else [[100 * (p.change - lo)], [100 * (hi - p.change)]]  # type: ignore[operator]
            shade = colour(i) if len(curves) > 1 else VERDICT_COLOURS.get(p.verdict, colour(0))
            ax.errorbar([p.x], [100 * p.change], yerr=err, fmt="o", color=shade, ecolor="#555555", capsize=3)  # type: ignore[operator]
    if line is not None and len(xs):
        intercept, slope, reciprocal = line
        # on a linear axis the line reaches 0, where its intercept (the change at 0) is read
        grid = np.geomspace(xs.min(), xs.max(), 200) if log_x else np.linspace(min(0.0, xs.min()), xs.max(), 200)
        at = np.where(grid == 0, 0.0, 1 / np.where(grid == 0, 1.0, grid)) if reciprocal else grid
        ax.plot(grid, 100 * (np.exp(intercept + slope * at) - 1), color="#444444", linewidth=1, label="fitted line")
    if line is not None or len(curves) > 1:
        ax.legend(loc="best")
    ax.axhline(0, color="black", linewidth=0.8)
    if ticks is None:
        _axis(ax, "x", log_x)
    else:
        ax.set_xticks(range(len(ticks)), [label(t) for t in ticks])
    ax.set_xlabel(label(parameter))
    ax.set_ylabel("change vs reference (%)")
    _title(ax, label(title, TITLE_MAX), bold=True)
    return canvas.svg(fig, title)


QUANTILE_PLACE = {"best": 0.0, "worst": 100.0}


def percentile_figure(
    canvas: Canvas, title: str, quantiles: list[str], series: list[tuple[str, str, np.ndarray]], unit: str
) -> str:
    """Each run's latency percentiles per variant (`series`: name, colour, runs x quantiles): the
    median run's profile as a line over the band of the runs (10th to 90th percentile of runs)."""
    fig = Figure(figsize=(WIDTH * 0.5, 3.2))
    fig.subplots_adjust(left=0.15, right=0.98, bottom=0.14, top=0.86)
    ax = fig.subplots()
    x = np.arange(len(quantiles))
    for name, colour_, matrix in series:
        if not len(matrix):
            continue
        with warnings.catch_warnings():  # a percentile no run of the variant has (a half that did not run) is a gap
            warnings.simplefilter("ignore", RuntimeWarning)
            if len(matrix) > 1:
                ax.fill_between(x, np.nanpercentile(matrix, 10, axis=0), np.nanpercentile(matrix, 90, axis=0),
                                color=colour_, alpha=0.2, linewidth=0)  # fmt: skip
            ax.plot(x, np.nanmedian(matrix, axis=0), "o-", color=colour_, markersize=3, label=label(name))
    values = np.concatenate([m.ravel() for _, _, m in series]) if series else np.empty(0)
    values = values[~np.isnan(values)]
    _axis(ax, "y", _log_worthy([values]))
    ax.set_xticks(x, [label(q) for q in quantiles])
    ax.set_ylabel(label(f"latency ({unit})" if unit else "latency"))
    _title(ax, label(title, TITLE_MAX), bold=True)
    ax.legend(loc="upper left")
    return canvas.svg(fig, title)


@dataclass
class Shares:
    """One variant's latency histogram: the share of its samples in each bucket (between the
    figure's edges), and the median of its samples, in the figure's unit."""

    name: str
    colour: str
    shares: np.ndarray
    median: float


def histogram_figure(canvas: Canvas, title: str, edges: np.ndarray, series: list[Shares], unit: str) -> str:
    """Step lines of each variant's share of samples per bucket over the buckets' `edges`, both
    axes logarithmic (the buckets are log-spaced, and a tail of a few samples in a million
    shows), empty buckets drawn at the bottom; a dashed line at each variant's median."""
    fig = Figure(figsize=(WIDTH * 0.5, 3.2))
    fig.subplots_adjust(left=0.15, right=0.98, bottom=0.14, top=0.86)
    ax = fig.subplots()
    nonzero = [float(s.shares[s.shares > 0].min()) for s in series if (s.shares > 0).any()]
    floor = 100 * min(nonzero, default=1.0) / 2
    for s in series:
        ax.stairs(np.maximum(100 * s.shares, floor), edges, baseline=floor, color=s.colour, linewidth=1.1, label=label(s.name))
        ax.axvline(s.median, color=s.colour, linestyle="--", linewidth=0.9)
    _axis(ax, "x", True)
    if edges[-1] / edges[0] < 300:  # two decades or so: decades alone would leave one tick or none
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    _axis(ax, "y", True)
    ax.set_xlim(float(edges[0]), float(edges[-1]))
    ax.set_ylim(floor, 100.0)
    ax.set_xlabel(label(f"latency ({unit})"))
    ax.set_ylabel("share of samples (%)")
    _title(ax, label(title, TITLE_MAX), bold=True)
    ax.legend(loc="upper right")
    return canvas.svg(fig, title)


@dataclass
class Bars:
    """One variant's scores over the categories (None: no score), with their 95% intervals."""

    name: str
    colour: str
    scores: list[float | None]
    ci: list[tuple[float | None, float | None]]


def score_figure(canvas: Canvas, title: str, categories: list[str], bars: list[Bars]) -> str:
    """Horizontal bars per category (overall, sections, workloads), one per variant or environment."""
    height = 0.8 + 0.16 * len(categories) * max(1, len(bars))
    fig = Figure(figsize=(WIDTH * 0.8, min(height, 30)))
    fig.subplots_adjust(left=0.2, right=0.76, bottom=0.6 / height, top=1 - 0.45 / height)
    ax = fig.subplots()
    width = 0.8 / max(1, len(bars))
    for j, b in enumerate(bars):
        ys = [i + (j - (len(bars) - 1) / 2) * width for i in range(len(categories))]
        scores = [s if s is not None else 0.0 for s in b.scores]
        known = [s is not None and lo is not None and hi is not None for s, (lo, hi) in zip(b.scores, b.ci, strict=True)]
        err = [[s - lo if ok else 0.0 for s, (lo, _), ok in zip(scores, b.ci, known, strict=True)],  # type: ignore[operator]
               [hi - s if ok else 0.0 for s, (_, hi), ok in zip(scores, b.ci, known, strict=True)]]  # type: ignore[operator]  # fmt: skip
        ax.barh(ys, scores, height=width * 0.9, color=b.colour, xerr=err, ecolor="#333333", capsize=2, label=label(b.name))
    ax.set_yticks(range(len(categories)), [label(c) for c in categories])
    ax.invert_yaxis()
    ax.set_xlabel("score (baseline machine = 1000)")
    _title(ax, label(title, TITLE_MAX), bold=True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return canvas.svg(fig, title)
