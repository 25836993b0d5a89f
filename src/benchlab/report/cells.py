"""How numbers of the JSON report read in a table, shared by the terminal and Markdown tables."""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any

from benchlab.suite.baseline import SECTION_TITLES


def quantity(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if value == 0:
        return f"0 {unit}".strip()
    digits = max(0, 3 - int(math.floor(math.log10(abs(value)))))
    return f"{value:,.{min(digits, 6)}f} {unit}".strip()


def percent(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.1f}%"


def change(value: float | None, ci: list[float | None]) -> str:
    if value is None:
        return "n/a"
    if ci[0] is None or ci[1] is None:
        return f"{percent(value)} [n/a]"
    return f"{percent(value)} [{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}]"


def verdict(row: dict[str, Any]) -> str:
    """The verdict with what would decide it: the blocks likely needed, or that the row's
    test cannot decide it (all differences zero, too few non-zero pairs)."""
    if row["verdict"] == "unclear" and row.get("runs_needed"):
        return f"unclear (~{row['runs_needed']} blocks)"
    if row["verdict"] == "unclear" and (row.get("note") or "").startswith("not tested"):
        return "unclear (untestable)"
    return str(row["verdict"])


FAMILY_LABELS = {"primary": "", "secondary": "secondary", "characteristic": "not judged", "scored": "as score"}


def metric_label(row: dict[str, Any]) -> str:
    """The metric's name, marked with its family where it is not a primary (outcome) metric."""
    label = FAMILY_LABELS.get(row.get("family") or "primary", "")
    return f"{row['metric']} ({label})" if label else str(row["metric"])


def family_note() -> str:
    """How the rows were judged, for the table's footer."""
    return (
        "primary metrics (a command's wall time, a workload's own timings, rates and scores) and secondary ones "
        "(CPU time) are corrected per workload and family, sharing alpha; 'not judged' rows (memory, faults, "
        "switches) are characteristics, judged only where the spec gives a direction"
    )


def grouped_rows(report: dict[str, Any]) -> list[tuple[tuple[str, str], dict[str, dict[str, Any]]]]:
    """Rows keyed by (workload, metric), each with its per-variant comparison, in report order."""
    grouped: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in report["rows"]:
        grouped[(row["workload"], row["metric"])][row["variant"]] = row
    return list(grouped.items())


def compared_variants(report: dict[str, Any]) -> list[str]:
    return [v for v in report["variants"] if v != report["baseline"]]


def failure_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for run in report["failed_runs"]:
        tail = (run.get("stderr_tail") or "").strip().splitlines()
        detail = f": {tail[-1]}" if tail else ""
        lines.append(f"{run['workload']} / {run['variant']} block {run['block']}: {run['status']}, {run['message']}{detail}")
    return lines


def geomean_notes(report: dict[str, Any]) -> list[str]:
    return [f"geomean of {g['variant']} ({g['direction']} is better): {g['note']}" for g in report["geomean"] if g.get("note")]


def geomean_label(direction: str) -> str:
    return "geomean (lower is better)" if direction == "lower" else "geomean (higher is better)"


def geomean_by_direction(report: dict[str, Any]) -> list[tuple[str, dict[str, dict[str, Any]]]]:
    """One line per direction, with each variant's geometric-mean change."""
    grouped: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for g in report["geomean"]:
        grouped[g["direction"]][g["variant"]] = g
    return list(grouped.items())


def section_title(section: str | None) -> str:
    return SECTION_TITLES.get(section or "", section or "")


def calibration_notes(report: dict[str, Any], workloads: set[str] | None = None) -> list[str]:
    """'this host: ...' per calibrated workload, to weigh its verdicts by how this machine behaves."""
    found = report["experiment"].get("calibration") or {}
    lines = []
    for workload, c in found.items():
        if workloads is not None and workload not in workloads:
            continue
        spread = "n/a" if c["spread"] is None else f"{c['spread']:.1%}"
        when = time.strftime("%Y-%m-%d", time.localtime(c["created_at"]))
        lines.append(
            f"this host: {workload} spread {spread} ({c['metric']}), A/A {c['false_verdicts']} of {c['experiments']} "
            f"with a false verdict at {c['blocks']} blocks (benchlab calibrate, {when})"
        )
    return lines
