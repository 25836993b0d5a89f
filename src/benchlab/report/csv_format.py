"""One CSV line per compared row, for spreadsheets."""

from __future__ import annotations

import csv
import io
from typing import Any

COLUMNS = [
    "workload", "metric", "unit", "direction", "variant", "n", "pairs", "baseline_median", "median",
    "median_ci_low", "median_ci_high", "change", "change_ci_low", "change_ci_high", "test", "p", "q",
    "verdict", "runs_needed", "family", "note",
]  # fmt: skip


def render(report: dict[str, Any]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in report["rows"]:
        flat = dict(row)
        flat["median_ci_low"], flat["median_ci_high"] = row["median_ci"]
        flat["change_ci_low"], flat["change_ci_high"] = row["change_ci"]
        writer.writerow(flat)
    return buffer.getvalue()
