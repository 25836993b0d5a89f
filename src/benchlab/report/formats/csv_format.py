"""CSV, for spreadsheets: one line per compared row of the view (metric rows, with the swept
values in the sweep view; score rows; time rows with the speed ratio). Text cells pass
through `safe.csv_cell` (escaped, and never read as a formula), numbers stay numbers."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from benchlab.report import safe
from benchlab.report.choices import View
from benchlab.report.views import times_grid
from benchlab.report.views.grids import resolved
from benchlab.report_model import FunctionRow, Profiles, Report

JUDGEMENT = [
    "change",
    "change_ci_low",
    "change_ci_high",
    "change_ci_level",
    "change_ci95_low",
    "change_ci95_high",
    "log_scale",
    "test",
    "p",
    "q",
    "verdict",
    "blocks_needed",
    "family",
    "note",
]
METRIC_COLUMNS = [
    "workload", "metric", "unit", "direction", "variant", "n", "pairs", "baseline_median", "median",
    "median_ci_low", "median_ci_high", *JUDGEMENT, "change_note",
]  # fmt: skip
SCORE_COLUMNS = [
    "level", "name", "section", "mode", "variant", "unit", "n", "score", "score_ci_low", "score_ci_high", *JUDGEMENT,
    "peak_memory_kib", "threads", "scaling", "spread", "covers",
]  # fmt: skip
PROFILE_COLUMNS = [
    "workload", "variant", "level", "name", "library", "kernel", "unit", "pairs", "baseline_self_median", "self_median",
    "baseline_inclusive_median", "inclusive_median", "shift", "share", *JUDGEMENT,
]  # fmt: skip
TIME_COLUMNS = [
    "workload", "metric", "unit", "variant", "n", "baseline_best", "baseline_median", "best", "median",
    "speedup", "speedup_ci_low", "speedup_ci_high", "log_scale", "verdict",
]  # fmt: skip


def _speedup(change: float | None) -> float | None:
    """The baseline's time over the variant's, as the times table says it ("1.14x faster")."""
    return None if change is None else times_grid.speedup(change)


def _metric_lines(report: Report, parameters: list[str]) -> Iterable[dict[str, Any]]:
    points = report.sweep.points if report.sweep else {}
    for row in report.rows:
        flat = row.model_dump()
        flat["median_ci_low"], flat["median_ci_high"] = row.median_ci
        flat["change_ci_low"], flat["change_ci_high"] = row.change_ci
        flat["change_ci95_low"], flat["change_ci95_high"] = row.change_ci95
        point = points.get(row.variant, {})
        yield {**flat, **{f"sweep.{p}": point.get(p) for p in parameters}}


def _score_lines(report: Report) -> Iterable[dict[str, Any]]:
    assert report.scores is not None
    for row in report.scores.rows:
        flat = row.model_dump()
        flat["score_ci_low"], flat["score_ci_high"] = row.score_ci
        flat["change_ci_low"], flat["change_ci_high"] = row.change_ci
        flat["change_ci95_low"], flat["change_ci95_high"] = row.change_ci95
        yield flat


def _time_lines(report: Report) -> Iterable[dict[str, Any]]:
    for _, by_variant in times_grid.rows(report):
        for row in by_variant.values():
            if row.variant == report.baseline:
                continue
            low, high = map(_speedup, row.change_ci)
            if low is not None and high is not None:
                low, high = sorted((low, high))
            yield {**row.model_dump(), "speedup": _speedup(row.change), "speedup_ci_low": low, "speedup_ci_high": high}


def profile_rows(profiles: Profiles) -> str:
    """`benchlab explain --format csv`: one line per function, library, space and whole row."""
    return _write(PROFILE_COLUMNS, (_judged(row) for row in profiles.rows))


def _judged(row: FunctionRow) -> dict[str, Any]:
    flat = row.model_dump()
    flat["change_ci_low"], flat["change_ci_high"] = row.change_ci
    flat["change_ci95_low"], flat["change_ci95_high"] = row.change_ci95
    return flat


def render(report: Report, view: View = "auto") -> str:
    shown = resolved(report, view)
    if shown == "scores":
        columns, lines = SCORE_COLUMNS, _score_lines(report)
    elif shown == "times":
        columns, lines = TIME_COLUMNS, _time_lines(report)
    else:
        parameters = report.sweep.parameters if shown == "sweep" and report.sweep else []
        columns, lines = [*(f"sweep.{p}" for p in parameters), *METRIC_COLUMNS], _metric_lines(report, parameters)
    return _write(columns, lines)


def _write(columns: list[str], lines: Iterable[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for line in lines:
        writer.writerow({k: safe.csv_cell(v) for k, v in line.items() if k in columns})
    return buffer.getvalue()
