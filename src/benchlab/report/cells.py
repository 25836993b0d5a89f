"""How numbers of the report read in a table, shared by the terminal and Markdown tables."""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from benchlab.report_model import GeomeanRow, Judgement, MetricRow, Report, ScoreRow
from benchlab.stats.test_choice import FIRST_LOOK, PARAMETRIC, SMALL_N
from benchlab.suite.baseline import SECTION_TITLES

SHIFT = "shift"  # marks a change that is a raw shift, not a ratio (see shift_note)
AGAINST_MEDIANS = "\u2020"  # a dagger: marks a change that points against the medians (see change_notes)
SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}  # the time units metrics carry, largest first


def quantity(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if value == 0:
        return f"0 {unit}".strip()
    digits = max(0, 3 - int(math.floor(math.log10(abs(value)))))
    return f"{value:,.{min(digits, 6)}f} {unit}".strip()


def time_unit(seconds: Iterable[float]) -> str:
    """The largest time unit in which the longest of these times is at least 1 (`ns` below that),
    so that a column of times reads in one unit with its digits before the point."""
    longest = max((abs(s) for s in seconds), default=0.0)
    return next((unit for unit, size in SECONDS.items() if longest >= size), "ns")


def in_unit(value: float | None, unit: str, shown: str) -> float | None:
    """A time in `unit` said in `shown` (both in SECONDS)."""
    return None if value is None else value * SECONDS[unit] / SECONDS[shown]


def percent(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.1f}%"


def change(value: float | None, ci: Sequence[float | None], *, log_scale: bool | None = True, missing: str = "n/a") -> str:
    """A change with its interval (whichever the caller holds: a row's at its corrected level, a
    fit's at 95%), marked `shift` where it is a raw shift, not a ratio;
    `missing` stands in for an interval there is none of (see `no_interval`)."""
    if value is None:
        return "n/a"
    mark = "" if log_scale is not False else f" {SHIFT}"
    if ci[0] is None or ci[1] is None:
        return f"{percent(value)} [{missing}]{mark}"
    return f"{percent(value)} [{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}]{mark}"


def no_interval(row: MetricRow | GeomeanRow) -> str:
    """Why a change has no interval, said where the interval would be: under a `[CI]` header
    a bare n/a reads as a gap. Too few blocks for any (a paired t needs 3 and some spread, the
    signed-rank interval 6) or for one at the row's corrected level (`n/a: 10 blocks at 99.8%`),
    every block's difference alike below 6, or too few runs on a side where runs could not pair
    (hosts merged)."""
    if isinstance(row, GeomeanRow):
        return f"n/a: {row.blocks} blocks{_at_level(row)}"
    if not row.pairs:
        return f"n/a: {row.n} runs{_at_level(row)}"
    if FIRST_LOOK <= row.pairs < SMALL_N and row.test != PARAMETRIC:
        return "n/a: all alike"
    return f"n/a: {row.pairs} blocks{_at_level(row)}"


def _at_level(row: MetricRow | GeomeanRow) -> str:
    """` at 99.8%` where there is a 95% interval but none at the row's corrected level: the rank
    test of so few blocks (or runs) cannot reach it, and the level says why."""
    if row.change_ci95[0] is None or row.change_ci_level is None or row.change_ci_level <= 0.95:
        return ""
    return f" at {math.floor(row.change_ci_level * 1000) / 10:.1f}%"


def no_change(row: MetricRow | GeomeanRow) -> str:
    """Why a compared row has no change: where its values can be zero the change is a shift over
    the baseline's median, which is nothing to divide by when that median is 0."""
    zero = isinstance(row, MetricRow) and row.baseline_median == 0 and row.median is not None
    return "n/a: baseline median 0" if zero else "n/a"


def row_change(row: MetricRow | GeomeanRow, shown: Callable[..., str] = change) -> str:
    """A row's change as `shown` says it (a percentage, or `--times`' speed ratio), or why there is
    none; marked with a dagger where it points against the medians (see change_notes)."""
    if row.change is None:
        return no_change(row)
    mark = f" {AGAINST_MEDIANS}" if isinstance(row, MetricRow) and row.change_note else ""
    return shown(row.change, row.change_ci, log_scale=row.log_scale, missing=no_interval(row)) + mark


def change_notes(rows: Sequence[MetricRow]) -> list[str]:
    """Under a table, one line for the changes marked with a dagger: which rows, and why a change
    can point against the medians (each row's own reason is its `change_note` in JSON)."""
    marked = [f"{r.workload} {r.metric} ({r.variant})" for r in rows if r.change_note]
    if not marked:
        return []
    return [
        f"{AGAINST_MEDIANS} the change points against the medians of the runs: {', '.join(marked)}. A change is the "
        "paired estimate over blocks (the mean of the per-block log ratios below 6 blocks, their Hodges-Lehmann "
        "median from 6; unpaired, the median of all differences between runs), which a block whose two runs moved "
        "far apart pulls, while a median of runs ignores which block a run was in; its interval says what is known"
    ]


def ci_label(report: Report) -> str:
    """The change column's heading: `CI` where judged rows show their corrected intervals (the
    footer says at which levels), `95% CI` where every one is the unadjusted 95% interval."""
    return "95% CI" if report.intervals == "raw" else "CI"


def interval_note(report: Report) -> str:
    """What the intervals beside the changes are, for a table's footer."""
    if report.intervals == "raw":
        return (
            "intervals: unadjusted 95% (--raw-intervals); a verdict reads its row's interval at the family's corrected "
            "level, which may be wider"
        )
    scores = report.scores.rows if report.scores else []
    levels = [r.change_ci_level for r in [*report.rows, *report.geomean, *scores] if r.verdict != "-" and r.change_ci_level]
    span = (
        f"{min(levels):.1%}"
        if levels and min(levels) == max(levels)
        else (f"{min(levels):.1%}-{max(levels):.1%}" if levels else "95%")
    )
    return (
        f"CI: a judged row's at its family's corrected level ({span}; better/worse exactly where it excludes 0), "
        "others 95%; --raw-intervals shows the unadjusted 95%"
    )


def shift_note(rows: Sequence[MetricRow | ScoreRow]) -> str:
    """The footnote a table with shifted changes needs, empty where every change is a ratio."""
    if all(r.log_scale is not False or r.change is None for r in rows):
        return ""
    return (
        f"'{SHIFT}': the metric has zero or negative values, so its change is the raw shift (variant minus "
        "baseline) over the baseline's median, not a ratio"
    )


def verdict(row: Judgement) -> str:
    """The verdict with what would decide it: the blocks likely needed, or that the row's
    test cannot decide it (all differences zero, too few non-zero pairs)."""
    if row.verdict == "unclear" and row.blocks_needed:
        return f"unclear (~{row.blocks_needed} blocks)"
    if row.verdict == "unclear" and (row.note or "").startswith("not tested"):
        return "unclear (untestable)"
    return row.verdict


FAMILY_LABELS = {"primary": "", "secondary": "secondary", "characteristic": "not judged", "scored": "as score"}


def metric_label(row: MetricRow) -> str:
    """The metric's name, marked with its family where it is not a primary (outcome) metric."""
    label = FAMILY_LABELS.get(row.family or "primary", "")
    return f"{row.metric} ({label})" if label else row.metric


def family_note() -> str:
    """How the rows were judged, for the table's footer."""
    return (
        "primary metrics (a command's wall time, a workload's own timings, rates and scores) and secondary ones "
        "(CPU time) are corrected per workload and family, sharing alpha; 'not judged' rows (memory, faults, "
        "switches) are characteristics, judged only where the spec gives a direction"
    )


def grouped_rows(report: Report) -> list[tuple[tuple[str, str], dict[str, MetricRow]]]:
    """Rows keyed by (workload, metric), each with its per-variant comparison, in report order."""
    grouped: dict[tuple[str, str], dict[str, MetricRow]] = defaultdict(dict)
    for row in report.rows:
        grouped[(row.workload, row.metric)][row.variant] = row
    return list(grouped.items())


def compared_variants(report: Report) -> list[str]:
    return [v for v in report.variants if v != report.baseline]


def failure_lines(report: Report) -> list[str]:
    lines = []
    for run in report.failed_runs:
        tail = (run["stderr_tail"] or "").strip().splitlines()
        detail = f": {tail[-1]}" if tail else ""
        lines.append(f"{run['workload']} / {run['variant']} block {run['block']}: {run['status']}, {run['message']}{detail}")
    return lines


def geomean_notes(report: Report) -> list[str]:
    return [f"geomean of {g.variant} ({g.direction} is better): {g.note}" for g in report.geomean if g.note]


def geomean_label(direction: str) -> str:
    return "geomean (lower is better)" if direction == "lower" else "geomean (higher is better)"


def geomean_by_direction(report: Report) -> list[tuple[str, dict[str, GeomeanRow]]]:
    """One line per direction, with each variant's geometric-mean change."""
    grouped: dict[str, dict[str, GeomeanRow]] = defaultdict(dict)
    for g in report.geomean:
        grouped[g.direction][g.variant] = g
    return list(grouped.items())


def section_title(section: str | None) -> str:
    return SECTION_TITLES.get(section or "", section or "")


def calibration_notes(report: Report, workloads: set[str] | None = None) -> list[str]:
    """'this host: ...' per calibrated workload, to weigh its verdicts by how this machine behaves."""
    lines = []
    for workload, c in report.experiment.calibration.items():
        if workloads is not None and workload not in workloads:
            continue
        spread = "n/a" if c.spread is None else f"{c.spread:.1%}"
        when = time.strftime("%Y-%m-%d", time.localtime(c.created_at))
        lines.append(
            f"this host: {workload} spread {spread} ({c.metric}), A/A {c.false_verdicts} of {c.experiments} "
            f"with a false verdict at {c.blocks} blocks (benchlab calibrate, {when})"
        )
    return lines
