"""One CSV line per compared row, for spreadsheets: text cells pass through `safe.csv_cell`
(escaped, and never read as a formula), numbers stay numbers."""

from __future__ import annotations

import csv
import io
from typing import Any

from benchlab.report import safe

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
        writer.writerow({k: safe.csv_cell(v) for k, v in flat.items() if k in COLUMNS})
    return buffer.getvalue()
